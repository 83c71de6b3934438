import type { Guards } from "../guards.js";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { renderNode } from "../broker/render-root.js";
import { publishMaterial, type MaterialKv } from "../broker/material-bucket.js";
import { materialSource } from "../broker/node-material.js";
import { clusterOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import { nodeAlive, nodeClientHost, nodeElsewhere, throughNode, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { INFO_PROBE_MS, sendsInfo } from "../broker/info-probe.js";
import type { SystemUser } from "../broker/system-client.js";
import type { InventoryRecord, NodeProof } from "../inventory/record.js";
import { configDigest } from "../render/server-config.js";
import { configPicture } from "../render/config-picture.js";
import { accountInventory, loadAuthorityAccount, loadSpaceAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { reloadAndProve, retainedSystem, type ReloadVerdict } from "./reload.js";
import { askedNodes, awaitAgentProofs, publishAsk, type AskPlan, type AskStore } from "./agent-ask.js";
import type { VersionedRecord } from "../inventory/authority-store.js";
import { renderList } from "./render-list.js";
import { applyConfig } from "./apply.js";

/** The options a Reloader takes (saga/reloader.ts), restated so this module needs nothing of it. */
interface ClusterReloadOptions {
  timeoutMs?: number;
  fence?: () => Promise<boolean>;
  mayLeaveBehind?: boolean;
  recordPartial?: (proofs: Record<string, Omit<NodeProof, "appliedGeneration">>) => Promise<void>;
  leaseId?: string;
}

type NodeVerdict = { node: NodeRuntime; digest: string; verdict: ReloadVerdict };

/**
 * A Reloader for a cluster root (docs/cluster.md "Who applies"): the saga promotes the root's
 * server.conf as on a single broker; this applies the same tenant list to every node in turn —
 * render that node's config, fence, rename, reload that server only, prove from that server — and
 * returns every node's proof. A node that cannot prove it refuses `cluster-unproven` after the others
 * were applied, so the claim stays for the next writer and nothing commits (invariant 2).
 */
export function clusterReloader(runtime: BrokerRuntime, nodes: readonly NodeRuntime[], layout: RootLayout, guards: Guards, material?: MaterialStore): { reload(opts?: ClusterReloadOptions): Promise<ReloadVerdict> } {
  return { reload: (opts = {}) => reloadNodes(runtime, nodes, layout, opts, guards, material) };
}

/** Where the writer publishes the node material and its ask, reads the record, and waits for the agents' proofs: the authority store. */
export interface MaterialStore extends AskStore {
  materialKv(replicas?: number): MaterialKv;
  read(): Promise<VersionedRecord | undefined>;
}

/**
 * The node material published under the writer's lease before any node's rename (docs/cluster.md
 * "The public bucket"), so every list a node may be asked to run (the record's, a claim's) renders
 * from the bucket by the time a node's agent reads the record that names it.
 */
export async function publishUnderLease(layout: RootLayout, material: MaterialStore | undefined, fence: () => Promise<boolean>, guards: Guards): Promise<void> {
  if (!material || guards.NODE_MATERIAL_UNPUBLISHED) return;
  if (!(await fence())) {
    throw new CotalError("lease-lost", "the writer lease expired before the node material was published; no node was touched and the claim stays for the next writer", {
      next: `${RERUN}   # the resume table completes or rolls back the claim on every node`,
    });
  }
  await publishMaterial(material.materialKv(clusterOf(layout, loadSettings(layout))?.replicas), materialSource(layout, guards));
}

/**
 * The tenants the promoted server.conf preloads, and only if that file is exactly the render of
 * them: a node then runs the same trust the saga proved the bytes of, never a list re-guessed here.
 */
export function promotedRecords(layout: RootLayout, guards: Guards): AccountRecord[] {
  const text = readFileSync(layout.serverConf, "utf8");
  const broker = loadBrokerTrust(layout);
  const picture = configPicture(text, accountInventory(layout).spaces, [loadAuthorityAccount(layout).publicKey, broker.system.publicKey]);
  const refuse = (why: string): never => {
    throw new CotalError("render-refused", `${layout.serverConf} ${why}; no node was touched`, { next: "cotal broker reconcile   # prints the record and both lists" });
  };
  if (picture.unknownKeys.length > 0) refuse(`preloads accounts no record vouches for (${picture.unknownKeys.join(", ")})`);
  if (renderList(layout, picture.preloadedNames, guards).digest !== configDigest(text)) refuse("is not the render of the tenants it preloads");
  return picture.preloadedNames.map((name) => loadSpaceAccount(layout, name) as AccountRecord);
}

async function reloadNodes(runtime: BrokerRuntime, nodes: readonly NodeRuntime[], layout: RootLayout, opts: ClusterReloadOptions, guards: Guards, material: MaterialStore | undefined): Promise<ReloadVerdict> {
  const t0 = Date.now();
  const fence = opts.fence;
  if (!fence) throw new CotalError("invalid-argument", "a cluster reload renames every node's config and was given no lease check", { next: `COTAL_DEBUG=1 ${RERUN}   # a caller of the cluster reloader passed no fence: report its output` });
  const records = promotedRecords(layout, guards);
  await publishUnderLease(layout, material, fence, guards);
  const asked = askedNodes(nodes);
  // Asked only by a writer that names its lease (an agent checks it) and has the store; REMOTE_NODE_BY_SIGNAL asks none.
  // The record the ask is of (none yet: a seed's, of generation 1); nothing asked: every node is applied from here.
  const asking = asked.length > 0 && material && opts.leaseId && !guards.REMOTE_NODE_BY_SIGNAL ? { store: material, leaseId: opts.leaseId, record: (await material.read())?.record } : undefined;
  const tag = `${process.pid}${randomBytes(4).toString("hex")}`;
  const done: NodeVerdict[] = [];
  const recorder = partialRecorder(opts, guards);
  // Nodes here first: the first one's rejection leaves every other node untouched, an asked one too.
  for (const node of nodes.filter((n) => !asking || !asked.includes(n))) {
    const { text, digest } = renderNode(layout, node.name, records, { guards });
    const { verdict } = await applyToNode(layout, runtime, node, { text, tag, fence, done, guards, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}), record: async (v) => v });
    // The first node rejected the bytes: no other node was touched, so the saga's rollback rules apply as on one broker.
    if (done.length === 0 && verdict.outcome === "failed") return { ...verdict, line: `node ${node.name}: ${verdict.line}` };
    done.push({ node, digest, verdict });
    if (verdict.outcome === "reloaded") await recorder.record(provenProofs([{ node, digest, verdict }]));
    await failpoint("after-node-proof");
  }
  if (asking) {
    const plan: AskPlan = { ...asking, replicas: clusterOf(layout, loadSettings(layout))?.replicas, fence, promotedDigest: configDigest(readFileSync(layout.serverConf, "utf8")), spaces: records.map((r) => r.name), guards };
    done.push(...(await askedVerdicts(plan, asked, runtime, layout, opts, recorder)));
  }
  return verdictOf(done, recorder, opts, guards, t0);
}

/** Asks the agents of the nodes elsewhere (docs/cluster.md "The writer asks, the agent applies") and waits, bounded, for their proofs. */
async function askedVerdicts(plan: AskPlan, asked: readonly NodeRuntime[], runtime: BrokerRuntime, layout: RootLayout, opts: ClusterReloadOptions, recorder: ReturnType<typeof partialRecorder>): Promise<NodeVerdict[]> {
  const ask = await publishAsk(asked, plan);
  const timeoutMs = Math.max(opts.timeoutMs ?? 0, ASK_WAIT_MS);
  const seen = await awaitAgentProofs(ask, asked, { store: plan.store, replicas: plan.replicas, runtime, system: retainedSystem(layout), timeoutMs, guards: plan.guards });
  const out: NodeVerdict[] = [];
  for (const node of asked) {
    const v = seen.get(node.name);
    if (!v) continue;
    out.push({ node, digest: v.digest, verdict: v.verdict });
    if (v.verdict.outcome === "reloaded") await recorder.record(provenProofs([{ node, digest: v.digest, verdict: v.verdict }]));
  }
  return out;
}

/** How long a writer waits for an asked agent at least: one agent round (2 s) and its apply, with room. */
const ASK_WAIT_MS = 15_000;

/** Every node's verdict as the reload's one: proven everywhere, left behind, or refused `cluster-unproven`. */
async function verdictOf(done: NodeVerdict[], recorder: ReturnType<typeof partialRecorder>, opts: ClusterReloadOptions, guards: Guards, t0: number): Promise<ReloadVerdict> {
  const unproven = done.filter((d) => d.verdict.outcome !== "reloaded");
  const proofs = provenProofs(done);
  // An add with only down (not rejecting) nodes behind commits on the others; those catch up at their next boot.
  const leaveBehind = opts.mayLeaveBehind === true && unproven.length < done.length && unproven.every((d) => d.verdict.outcome === "unproven");
  if (unproven.length > 0 && !leaveBehind && !guards.CLUSTER_COMMIT_UNPROVEN) {
    const err = unprovenError(done, unproven);
    // A proof whose CAS failed as it was made gets one more try before the refusal.
    const missed = Object.fromEntries(Object.entries(proofs).filter(([name]) => !recorder.recorded.has(name)));
    if (Object.keys(missed).length > 0) await recorder.record(missed);
    if (recorder.failed().length > 0) err.message += `\n(${recorder.failed().join("; ")}; status counts those nodes as still admitting)`;
    throw err;
  }
  const first = done[0]?.verdict;
  const notes = done.flatMap((d) => (d.verdict.notes ?? []).map((n) => `node ${d.node.name}: ${n}`));
  if (recorder.failed().length > 0) notes.push(`${recorder.failed().join("; ")}; status counted those nodes as still admitting until this commit`);
  if (leaveBehind && unproven.length > 0) notes.push(`node${unproven.length > 1 ? "s" : ""} ${unproven.map((d) => d.node.name).join(", ")} did not prove it (${unproven.map((d) => lastWord(d.verdict)).join("; ")}) and stay behind until their next boot: cotal up   # restarts them, which applies the committed record`);
  return { outcome: "reloaded", via: first?.via ?? "signal", line: `${Object.keys(proofs).length}/${done.length} nodes reloaded: ${done.map((d) => d.node.name).join(", ")}`, ms: Date.now() - t0, nodes: proofs, ...(notes.length > 0 ? { notes } : {}) };
}

/**
 * Hands each node's proof to the saga as soon as that node proved the claim (docs/cluster.md
 * "Partial proofs"), so a writer killed mid-reload leaves the nodes it proved named in the claim. A
 * CAS that fails is not fatal: that node stays counted as still admitting (the conservative side).
 */
function partialRecorder(opts: ClusterReloadOptions, guards: Guards) {
  const recorded = new Set<string>();
  const failures = new Map<string, string>();
  const record = async (proofs: Record<string, Omit<NodeProof, "appliedGeneration">>): Promise<void> => {
    if (!opts.recordPartial || guards.CLUSTER_NO_PARTIAL_PROOFS) return;
    const names = Object.keys(proofs);
    try {
      await opts.recordPartial(proofs);
      for (const name of names) {
        recorded.add(name);
        failures.delete(name);
      }
    } catch (e) {
      for (const name of names) failures.set(name, (e as Error).message);
    }
  };
  /** One line per failed node, for the refusal or the success's notes. */
  const failed = (): string[] => [...failures].map(([name, why]) => `the proof of ${name} could not be recorded in the claim: ${why}`);
  return { record, recorded, failed };
}

/** The proofs of the nodes that reloaded, stamped now (the caller adds the generation). */
function provenProofs(done: readonly NodeVerdict[]): Record<string, Omit<NodeProof, "appliedGeneration">> {
  const provenAt = new Date().toISOString();
  const proofs: Record<string, Omit<NodeProof, "appliedGeneration">> = {};
  for (const d of done) {
    if (d.verdict.outcome !== "reloaded") continue;
    proofs[d.node.name] = { configDigest: d.digest, ...(d.verdict.serverConfigDigest ? { serverConfigDigest: d.verdict.serverConfigDigest } : {}), provenAt };
  }
  return proofs;
}

/** One node's apply: its render, the caller's fence, and how the caller records what the reload proved. */
export interface NodeApply<P> {
  text: string;
  /** Names the staged file beside the node's config (unique per writer). */
  tag: string;
  fence: () => Promise<boolean>;
  /** The nodes this writer already applied (named by a lost lease's refusal). */
  done?: readonly { node: { name: string } }[];
  timeoutMs?: number;
  record: (verdict: ReloadVerdict) => Promise<P>;
  /** The verb's guards (CLUSTER_NO_NODE_FENCE, and the reload's; docs/ablation.md). */
  guards: Guards;
  /** Who asks the node to reload: a node agent's own system user; absent, one the root's system account mints. */
  system?: SystemUser;
}

/**
 * One node through the one apply path (saga/apply.ts): stage beside its config, fence, rename, reload
 * that server, prove from it, record the proof. Each node of a cluster reload (recorded by the saga
 * after the reload) and `cotal node run` (ops/node-agent.ts, recording its node's proof) apply this way.
 */
export async function applyToNode<P>(layout: RootLayout, runtime: BrokerRuntime, node: NodeRuntime, a: NodeApply<P>): Promise<{ verdict: ReloadVerdict; proof: P }> {
  const target = layout.nodeServerConf(node.name);
  if (node.configPath !== target) throw new CotalError("corrupt-record", `run/broker.json names ${node.configPath} for node ${node.name}, not ${target}`, { next: "cotal down   # then cotal up" });
  const lost = (): CotalError => {
    const already = (a.done ?? []).map((d) => d.node.name);
    return new CotalError("lease-lost", `the writer lease expired before node ${node.name}'s rename${already.length ? `; nodes ${already.join(", ")} already had the new config` : ""}; the claim stays for the next writer`, {
      next: `${RERUN}   # the resume table completes or rolls back the claim on every node`,
      details: { node: node.name, applied: already },
    });
  };
  const { guards } = a;
  const applied = await applyConfig({
    target,
    staged: layout.nodeStagedConf(node.name, a.tag),
    config: () => a.text,
    fence: { held: a.fence, lost, unchecked: guards.CLUSTER_NO_NODE_FENCE },
    reload: () => reloadNode(layout, runtime, node, { expected: a.text, ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}), ...(a.system ? { system: a.system } : {}) }, guards),
    steps: { renamed: () => failpoint("node-renamed") },
    record: a.record,
  });
  return { verdict: applied.verdict, proof: applied.proof };
}

/** Reloads one node's server and proves it from that server; a node that is not running proves nothing. */
async function reloadNode(layout: RootLayout, runtime: BrokerRuntime, node: NodeRuntime, want: { expected: string; timeoutMs?: number; system?: SystemUser }, guards: Guards): Promise<ReloadVerdict> {
  const { timeoutMs, expected, system } = want;
  const t0 = Date.now();
  // A node on another host is judged by its answer below, never by the pid recorded for it.
  const elsewhere = nodeElsewhere(node);
  if (!elsewhere && !nodeAlive(node)) return { outcome: "unproven", via: "signal", logTail: `node ${node.name} (pid ${node.owner.pid}) is not running`, ms: Date.now() - t0 };
  const nodeRuntime = throughNode(runtime, node);
  delete nodeRuntime.nodes;
  // A node that sends no INFO (stopped, partitioned) is signalled, not asked: a NATS client whose
  // connect times out keeps its socket (and this process) alive; the signal path needs no socket.
  // A node on another host is never signalled: it is asked, or it proves nothing (docs/cluster.md "Partition by a cut link").
  const host = nodeClientHost(node, runtime.host);
  const remote = elsewhere && !guards.REMOTE_NODE_BY_SIGNAL;
  const answers = await sendsInfo(node.port, host, INFO_PROBE_MS);
  if (remote && !answers) return { outcome: "unproven", via: "request", logTail: `node ${node.name} on host ${host} sent no INFO on ${host}:${node.port} within ${INFO_PROBE_MS} ms (cut off or down); a node on another host is asked, never signalled`, ms: Date.now() - t0 };
  return reloadAndProve(nodeRuntime, { ...(answers ? { layout } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}), guards, expected, ...(remote ? { remote } : {}), ...(system ? { system } : {}) });
}

/** A node's verdict in one line: the last line of what it said. */
function lastWord(v: ReloadVerdict): string {
  return "logTail" in v ? (v.logTail.trim().split("\n").filter(Boolean).slice(-1)[0] ?? "no log line after the reload") : v.line;
}

function unprovenError(done: readonly NodeVerdict[], unproven: readonly NodeVerdict[]): CotalError {
  const names = unproven.map((d) => d.node.name);
  const why = unproven.map((d) => `  ${d.node.name}: ${d.verdict.outcome} (${lastWord(d.verdict)})`).join("\n");
  const proven = done.filter((d) => d.verdict.outcome === "reloaded").map((d) => d.node.name);
  return new CotalError("cluster-unproven", `node${names.length > 1 ? "s" : ""} ${names.join(", ")} did not prove the new config; nothing was committed (proven on: ${proven.join(", ") || "none"}):\n${why}`, {
    next: `cotal up && ${RERUN}   # up restarts a stopped node with every tenant held; the re-run completes the change on every node`,
    details: { unproven: names, proven, nodes: Object.fromEntries(done.map((d) => [d.node.name, d.verdict.outcome])) },
  });
}
