import { type Guards, type SagaLimits } from "../guards.js";
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { RERUN, CotalError, isCotalError } from "../errors.js";
import { retryWhile } from "../retry.js";
import { pidStopped } from "../lock/process-identity.js";
import { adoptableBroker } from "../broker/adopt.js";
import { brokerState, nodeStopped, throughNode, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { authorityProbe, chooseNode, NODE_ANSWER_MS, rankNodes, reachNodes } from "./reach.js";
import { AuthorityStore } from "../inventory/authority-store.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { nodeDirMarkerOf } from "../root/node-dir.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { startPrivateBroker } from "../broker/private-broker.js";
import type { SagaEnv } from "../saga/mutation.js";
import { brokerReloader } from "../saga/reloader.js";
import type { PhaseListener, SagaTiming } from "../saga/steps.js";

/** One lease key per root: the writer lease fences every cooperative writer of this root's config. */
export function leaseKeyFor(layout: RootLayout): string {
  // A node's own directory (`cotal node bundle`) fences on its control root's writers' lease.
  const bundled = nodeDirMarkerOf(layout.root);
  if (bundled) return bundled.leaseKey;
  let path = layout.root;
  try {
    path = realpathSync(layout.root);
  } catch {
    // a root that does not exist yet has no lease to share
  }
  return `root_${createHash("sha256").update(path).digest("hex").slice(0, 24)}`;
}

/** A saga environment's broker side: the authority store, and the running broker when there is one. */
export interface Session {
  url: string;
  runtime?: BrokerRuntime;
  store: AuthorityStore;
  /** The saga environment, once the verb holds the maintenance lock. */
  envWith(lock: MaintenanceLock): SagaEnv;
  close(): Promise<void>;
}

export interface LiveSession extends Session {
  runtime: BrokerRuntime;
  /** A cluster's nodes that did not answer, or whose JetStream could not read the record, when the session chose its node. */
  unanswered?: string[];
}

export interface SessionHooks {
  /** The verb's guards (docs/ablation.md): the session's store and reloader take them; a verb passes its own. */
  guards?: Guards;
  /** What the entry hands the saga beside the guards (its retry bound, its lease wait). */
  saga?: SagaLimits;
  onNotice?: (message: string) => void;
  onTiming?: (step: SagaTiming, ms: number) => void;
  /** The preamble's steps and the saga's as they start and end (steps.ts): the CLI's phase line and log lines. */
  onPhase?: PhaseListener;
  /** SagaEnv.onAttempt: the exporter's attempt and conflict counters (docs/metrics.md). */
  onAttempt?: SagaEnv["onAttempt"];
  /** A provisioning retried after a dropped connection (provision-batch.ts), for the exporter's counter. */
  onProvisionRetry?: (space: string) => void;
}

/** A saga environment on the running broker. A mutation that cannot reach the KV refuses; it never falls back to disk. */
export async function openLiveSession(layout: RootLayout, verb: string, hooks: SessionHooks & { guards: Guards }): Promise<LiveSession> {
  const st = brokerState(layout, { firstNodeOnly: hooks.guards.VERBS_FIRST_NODE_ONLY, unrecordedIgnored: hooks.guards.UNRECORDED_NODES_IGNORED });
  if (!st.running) {
    // A running broker whose run/broker.json is unreadable: `up` adopts it with no restart (broker/adopt.ts).
    const orphan = adoptableBroker(layout, hooks.guards);
    const why = orphan ? `${layout.runtimeFile} is unreadable, but nats-server pid ${orphan.owner.pid} serves this root: \`cotal up\` adopts it without a restart` : `the broker of ${layout.root} is not running; the inventory lives in its store`;
    throw new CotalError("broker-not-running", why, {
      next: `cotal up --detach${layout.root === undefined ? "" : ` --root ${layout.root}`} && ${RERUN}`,
    });
  }
  const authority = loadAuthorityAccount(layout);
  const connect = (urls: readonly string[]): Promise<AuthorityStore> => AuthorityStore.connect(urls, authority, { name: `cotal ${verb}`, guards: hooks.guards });
  try {
    const { store, runtime, unanswered } = st.runtime.nodes ? await throughAnyNode(st.runtime, authority, connect, hooks.guards) : await throughBroker(st.runtime, connect);
    return { url: runtime.url, runtime, store, ...(unanswered ? { unanswered } : {}), envWith: envFor(layout, store, hooks, runtime), close: () => store.close() };
  } catch (err) {
    throw unresponsiveBroker(st.runtime, err) ?? err;
  }
}

/** One broker: its own URL (a stopped process answers nothing: refused with its way out). */
async function throughBroker(runtime: BrokerRuntime, connect: (urls: readonly string[]) => Promise<AuthorityStore>): Promise<{ store: AuthorityStore; runtime: BrokerRuntime; unanswered?: undefined }> {
  const urls = answeringUrls(runtime);
  if (urls.length === 0) throw unresponsiveBroker(runtime, undefined) ?? new CotalError("broker-unreachable", `the broker at ${runtime.url} cannot answer`, { next: "cotal status" });
  return { store: await connect(urls), runtime };
}

/**
 * A cluster (docs/cluster.md "Verbs through any node"): every node asked at once (NODE_ANSWER_MS),
 * the store connected through the ranked list (nats.js takes them in order, and moves on across a
 * reload), the runtime returned with the first ranked node on top, which provisioning and the
 * usage checks then use. While some node does not answer or cannot read the record, the others may
 * be electing leaders for the R3 buckets: an `inventory-unreachable` asks every node again, for up
 * to ELECTION_WAIT_MS.
 */
async function throughAnyNode(runtime: BrokerRuntime, authority: AccountRecord, connect: (urls: readonly string[]) => Promise<AuthorityStore>, guards: Guards): Promise<{ store: AuthorityStore; runtime: BrokerRuntime; unanswered: string[] }> {
  const nodes = runtime.nodes ?? [];
  let electing = false;
  return retryWhile(
    async () => {
      const reach = await reachNodes(nodes.filter((n) => !nodeStopped(n)), authorityProbe(authority));
      electing = reach.length < nodes.length || reach.some((r) => r.jetstream !== true);
      const ranked = rankNodes(reach, guards);
      const chosen = chooseNode(reach, guards);
      if (!chosen) throw new CotalError("broker-unreachable", `no node of this cluster answered within ${NODE_ANSWER_MS} ms: ${reach.map((r) => `${r.name} (${r.url}): ${r.why ?? "?"}`).join("; ") || "every node is stopped"}`, { next: "cotal status   # each node as this host reaches it" });
      const store = await connect(ranked.map((r) => r.url));
      const node = nodes.find((n) => n.name === chosen.name) as NodeRuntime;
      const unanswered = nodes.filter((n) => reach.find((r) => r.name === n.name)?.jetstream !== true).map((n) => n.name);
      return { store, runtime: throughNode(runtime, node), unanswered };
    },
    { transient: (err) => electing && isCotalError(err, "inventory-unreachable"), forMs: ELECTION_WAIT_MS, pauseMs: 500 },
  );
}

/** The client URLs of the root's servers whose process is not stopped: the runtime's own (the node it goes through) first. */
export function answeringUrls(runtime: BrokerRuntime): string[] {
  // A single broker is this host's own process; a cluster's top fields are one of its nodes (throughNode), each judged as a node.
  if (!runtime.nodes) return pidStopped(runtime.owner.pid) ? [] : [runtime.url];
  return [...new Set([runtime, ...runtime.nodes].filter((n) => !nodeStopped(n)).map((n) => n.url))];
}

/** How long a session waits for a cluster with a stopped node to elect new leaders for the inventory's buckets. */
const ELECTION_WAIT_MS = 20_000;

/**
 * A broker whose process runs but does not answer, named with what unsticks it (issue #28 finding 3):
 * a stopped process (SIGSTOP) takes `kill -CONT`; otherwise undefined and the caller's refusal stands.
 */
export function unresponsiveBroker(runtime: BrokerRuntime, cause: unknown): CotalError | undefined {
  // Only a process of this host can be seen stopped (and continued) from here: a node elsewhere never is.
  const procs = runtime.nodes?.map((n) => ({ pid: n.owner.pid, name: `node ${n.name}`, stopped: nodeStopped(n) })) ?? [{ pid: runtime.owner.pid, name: "the nats-server", stopped: pidStopped(runtime.owner.pid) }];
  const stopped = procs.filter((p) => p.stopped);
  if (stopped.length === 0) return undefined;
  const pids = [...new Set(stopped.map((p) => p.pid))];
  const others = procs.length > stopped.length ? `; the others answered, but the inventory did not within ${ELECTION_WAIT_MS / 1000} s (${(cause as Error | undefined)?.message ?? "no answer"})` : "";
  return new CotalError("broker-unreachable", `${stopped.map((p) => `${p.name} (pid ${p.pid})`).join(", ")} of this root is stopped (SIGSTOP): it holds its port and answers nothing${others}; nothing was changed`, {
    next: `kill -CONT ${pids.join(" ")} && ${RERUN}`,
    details: { stopped: pids, url: runtime.url },
    cause,
  });
}

function envFor(layout: RootLayout, store: AuthorityStore, hooks: SessionHooks & { guards: Guards }, runtime?: BrokerRuntime): (lock: MaintenanceLock) => SagaEnv {
  return (lock) => ({
    layout,
    store,
    ...(runtime ? { reloader: brokerReloader(runtime, layout, hooks.guards, store) } : {}),
    lock,
    leaseKey: leaseKeyFor(layout),
    guards: hooks.guards,
    ...hooks.saga,
    ...(hooks.onNotice ? { onNotice: hooks.onNotice } : {}),
    ...(hooks.onTiming ? { onTiming: hooks.onTiming } : {}),
    ...(hooks.onPhase ? { onPhase: hooks.onPhase } : {}),
    ...(hooks.onAttempt ? { onAttempt: hooks.onAttempt } : {}),
  });
}

/**
 * The saga environment with the broker stopped: a private broker on the store that preloads no
 * tenant (or exactly `preload`, for a removal that must still delete one tenant's streams). A saga
 * run here stops after promotion; the next `up` boots and commits it. The caller holds the lock.
 */
export async function openOfflineSession(layout: RootLayout, verb: string, hooks: SessionHooks & { guards: Guards }, preload: AccountRecord[] = []): Promise<Session> {
  const mb = await startPrivateBroker(layout, { storeDir: layout.storeDir, workDir: layout.runDir, spaces: preload, label: "maintenance", guards: hooks.guards });
  let store: AuthorityStore;
  try {
    store = await AuthorityStore.connect(mb.url, loadAuthorityAccount(layout), { name: `cotal ${verb} (maintenance)`, guards: hooks.guards });
  } catch (err) {
    await mb.stop();
    throw err;
  }
  return {
    url: mb.url,
    store,
    envWith: envFor(layout, store, hooks),
    close: async () => {
      await store.close().catch(() => undefined);
      await mb.stop();
    },
  };
}
