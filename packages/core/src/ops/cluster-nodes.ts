import { type Guards } from "../guards.js";
import { natsServerVersion } from "../broker/binary.js";
import { startNodes } from "../broker/cluster-process.js";
import { renderNode } from "../broker/render-root.js";
import { isLocalNode, nodeAlive, nodeElsewhere, readRuntime, writeNodeRuntime, writeRuntime, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { serversOfRoot } from "../broker/server-scan.js";
import { isCotalError, CotalError } from "../errors.js";
import { retryWhile } from "../retry.js";
import { AuthorityStore, type AgentUser } from "../inventory/authority-store.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { clusterOf, type ClusterNodeSettings, type ClusterSettings } from "../root/cluster-settings.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir } from "../root/secret-files.js";
import { writeUnservedConfig } from "../saga/apply.js";
import { loadSettings, type RootSettings } from "../root/settings.js";
import { publishUnderLease } from "../saga/cluster-reloader.js";
import { acquireLeaseWaiting } from "../saga/lease-holder.js";
import { LeaseKeeper } from "../saga/lease-keeper.js";
import { leaseKeyFor } from "../verb/session.js";
import { shellWord } from "../error-shape.js";
import { join } from "node:path";
import { raftDir, strandedRaftState } from "../broker/raft-state.js";

// What `cotal up` on a cluster root (ops/boot-cluster.ts) and `cotal node run` (ops/node-agent.ts)
// share: starting nodes and recording them, and the replicated authority store (docs/cluster.md).

/** run/broker.json for a cluster: the first node's fields on top (what verbs connect through), every node below. */
export function clusterRuntime(nodes: NodeRuntime[], host: string, serverVersion: string, startedAt: string): Omit<BrokerRuntime, "format"> {
  const first = nodes[0] as NodeRuntime;
  return { owner: first.owner, url: first.url, host, port: first.port, configPath: first.configPath, logFile: first.logFile, serverVersion, detached: true, startedAt, nodes };
}

/**
 * The recorded nodes that run, by name: a local one by its pid, a node on another host kept as its own
 * host recorded it (judged by its answer where that matters: ops/boot-cluster.ts). A server of this
 * root no record names refuses (a second one on its store would corrupt it).
 */
export function liveNodesOrRefuse(layout: RootLayout, guards: Guards): { prior: BrokerRuntime | undefined; alive: Map<string, NodeRuntime> } {
  const prior = readRuntime(layout);
  const alive = new Map((prior?.nodes ?? []).filter((n) => nodeAlive(n) || nodeElsewhere(n)).map((n) => [n.name, n] as const));
  const livePids = new Set([...alive.values()].map((n) => n.owner.pid));
  // A server of a node whose host is another's cannot run here (it could not bind its address): on
  // hosts sharing one process table (the simulated ones) it is that host's, recorded there or not.
  const remote = new Set(remoteNodeConfigs(layout));
  const strays = serversOfRoot(layout, guards).filter((s) => !livePids.has(s.pid) && !remote.has(s.config));
  if (strays.length > 0) {
    throw new CotalError("broker-running", `a nats-server of this root is already running without a record: ${strays.map((p) => `pid ${p.pid} (${p.config})`).join(", ")}; a second one on the same store would corrupt it`, {
      next: "cotal down   # stops every server of this root, recorded or not",
      details: { strays },
    });
  }
  return { prior, alive };
}

/** The config paths of the nodes settings.json puts on another host's address. */
function remoteNodeConfigs(layout: RootLayout): string[] {
  let settings;
  try {
    settings = loadSettings(layout);
  } catch {
    return []; // unreadable settings: every unrecorded server counts as a stray (the conservative side)
  }
  const cluster = clusterOf(layout, settings);
  return (cluster?.nodes ?? []).filter((n) => !isLocalNode(n, settings?.host ?? "127.0.0.1")).map((n) => layout.nodeServerConf(n.name));
}

/**
 * Writes each node's config (the given list, or with `maintenance` no tenant at all: invariant 3),
 * starts those nodes and records every running node of the root in run/broker.json, before the
 * ready wait and after it. Returns the root's nodes in settings order.
 */
export async function startClusterNodes(
  layout: RootLayout,
  settings: RootSettings,
  cluster: ClusterSettings,
  toStart: readonly ClusterNodeSettings[],
  opts: { list: AccountRecord[]; maintenance: boolean; alive: Map<string, NodeRuntime>; prior: BrokerRuntime | undefined; guards: Guards; render?: (node: string) => string },
): Promise<NodeRuntime[]> {
  for (const n of toStart) {
    ensureSecretDir(layout.nodeDir(n.name));
    // An agent hands in its render from the node material it read (ops/node-agent.ts); `up` renders from the root's disk.
    const text = opts.render ? opts.render(n.name) : renderNode(layout, n.name, opts.list, { guards: opts.guards, ...(opts.maintenance ? { maintenance: true } : {}) }).text;
    refuseStrandedRaftState(layout, n.name, text);
    writeUnservedConfig(layout.nodeServerConf(n.name), text);
  }
  const version = natsServerVersion().raw;
  const startedAt = opts.prior?.nodes && opts.alive.size > 0 ? opts.prior.startedAt : new Date().toISOString();
  const ordered = (spawned: NodeRuntime[]): NodeRuntime[] => cluster.nodes.map((n) => opts.alive.get(n.name) ?? spawned.find((s) => s.name === n.name)).filter((n): n is NodeRuntime => n !== undefined);
  const started = (spawned: NodeRuntime[]): void => {
    const rt = writeRuntime(layout, clusterRuntime(ordered(spawned), settings.host, version, startedAt));
    for (const n of spawned) writeNodeRuntime(layout, rt, n);
  };
  if (toStart.length > 0) await startNodes(layout, settings.host, toStart, started);
  const nodes = ordered(readRuntime(layout)?.nodes ?? []);
  writeRuntime(layout, clusterRuntime(nodes, settings.host, version, startedAt));
  return nodes;
}

/**
 * A node whose store holds the cluster's raft groups under another system account than the one its
 * config names would boot an empty meta group and delete every stream as orphaned 30 s later
 * (broker/raft-state.ts): refused before it starts, naming the carry that saves them.
 */
export function refuseStrandedRaftState(layout: RootLayout, node: string, config: string): void {
  const system = /^system_account: (\S+)$/m.exec(config)?.[1];
  if (!system) return;
  const store = layout.nodeStoreDir(node);
  const stranded = strandedRaftState(store, system);
  if (stranded.length === 0) return;
  const only = stranded.length === 1 ? (stranded[0] as string) : undefined;
  throw new CotalError("corrupt-record", `node ${node}'s store holds the cluster's raft state under system account ${stranded.join(", ")}, not under ${system}, the one its config names: booted so, it would delete every stream it stores as orphaned; it was not started`, {
    next: only
      ? `mkdir -p ${shellWord(join(store, "jetstream", system))} && mv ${shellWord(raftDir(store, only))} ${shellWord(raftDir(store, system))}   # the retired account's raft state, carried over; then start the node again`
      : `ls -lt ${shellWord(join(store, "jetstream"))}   # several retired accounts: carry the newest _js_ to ${shellWord(raftDir(store, system))}, then start the node again`,
    details: { node, system, stranded },
  });
}

/** The R3 authority store on a cluster root, re-trying while a fresh meta group may not count a peer as current yet. */
export async function connectReplicated(url: string | readonly string[], layout: RootLayout, replicas: number, guards: Guards, opts: { timeoutMs?: number; name?: string; connectTimeoutMs?: number; user?: AgentUser } = {}): Promise<AuthorityStore> {
  // Right after the election a peer may not count as current yet, so an R3 create can fail; its shape never heals.
  return retryWhile(() => AuthorityStore.connect(url, opts.user ?? loadAuthorityAccount(layout), { name: opts.name ?? "cotal up (cluster)", replicas, guards, ...(opts.connectTimeoutMs !== undefined ? { timeoutMs: opts.connectTimeoutMs } : {}) }), {
    transient: (err) => !isCotalError(err, "inventory-corrupt"),
    forMs: opts.timeoutMs ?? 30_000,
    pauseMs: 500,
  });
}

/**
 * Right after nodes start, each R3 bucket elects its own leader after the meta leader does, and until
 * then JetStream answers "temporarily unavailable" (`inventory-unreachable`). Retries `step`, which
 * must be safe to repeat (a read, a lease acquire), until it answers or `ms` has passed.
 */
export function pastBucketElection<T>(step: () => Promise<T>, ms = 30_000): Promise<T> {
  return retryWhile(step, { transient: (err) => isCotalError(err, "inventory-unreachable"), forMs: ms, pauseMs: 500 });
}

/**
 * Publishes the node material now, under the writer lease, through whichever of `urls` answers: what a
 * node that joined since the last reload needs to render its held boot (docs/cluster.md "Joining: cotal
 * node add"). Best effort: returns why it could not, and the next cluster reload publishes it anyway.
 */
export async function publishMaterialNow(layout: RootLayout, urls: readonly string[], cluster: ClusterSettings, guards: Guards): Promise<string | undefined> {
  let store: AuthorityStore | undefined;
  try {
    store = await connectReplicated(urls, layout, cluster.replicas, guards, { timeoutMs: 5_000, connectTimeoutMs: 3_000, name: "cotal (node material)" });
    const s = store;
    const keeper = new LeaseKeeper(s, await pastBucketElection(() => acquireLeaseWaiting(s, leaseKeyFor(layout), "cotal (node material)"), 10_000));
    try {
      await publishUnderLease(layout, s, () => keeper.held(), guards);
    } finally {
      await keeper.stop(true);
    }
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await store?.close();
  }
}

/**
 * A refusal after `cotal node add` or `node forget` changed settings.json: re-running that verb would
 * add another node (or find none to forget), so every re-run its `next` names becomes the `up` that
 * finishes the change on every node (docs/cluster.md "Joining", "Leaving"). Anything else as it was.
 */
export function finishedByUp(err: unknown, root: string, what: string): unknown {
  if (!isCotalError(err) || err.next === undefined || !/\{rerun(:[A-Za-z0-9_-]*)?\}/.test(err.next)) return err;
  const up = `cotal --root ${shellWord(root)} up --detach`;
  return new CotalError(err.code, `${err.message} (${what} is already in settings.json: \`${up}\` finishes it)`, { next: err.next.replace(/\{rerun(:[A-Za-z0-9_-]*)?\}/g, up), ...(err.details ? { details: err.details } : {}), cause: err });
}
