import { hostname } from "node:os";
import { nodeAlive, nodeElsewhere, nodeStopped, unrecorded, type NodeRuntime } from "../broker/runtime.js";
import { shellWord } from "../error-shape.js";
import type { InventoryRecord } from "../inventory/record.js";
import { ownerStatus } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import type { NodeAgentState } from "../root/node-state.js";
import { nodesNotProven } from "../saga/partial-proofs.js";
import type { NodeReach } from "../verb/reach.js";
import { checkNodeStreams, describeProblems, tenantAccounts, waitStreamsServed, type StreamCheck, type StreamProblem } from "./node-streams.js";

/** One cluster node as `cotal status` shows it: its process, and its own proof from the record. */
export interface NodeStatus {
  name: string;
  /** null: no process recorded (the root is down: `down` clears run/broker.json; a node this host's record lacks). */
  pid: number | null;
  /** The host whose cotal recorded this node, when that is another host: `pid` is a pid there (docs/cluster.md "Liveness by reachability"). */
  elsewhere?: string;
  url: string;
  port: number;
  clusterPort: number;
  running: boolean;
  /** The generation this node was last proven to load (null: no proof recorded, or the record is unread). */
  appliedGeneration: number | null;
  configDigest: string | null;
  /** Behind the committed generation: it may still run an older list (docs/cluster.md invariant 1). */
  behind: boolean | null;
  /**
   * During an uncommitted removal: the removed tenants this node may still admit, because it has not
   * proven the claim (neither a partial proof in the claim nor its full proof). Empty otherwise.
   */
  stillAdmits: string[];
  /** `cotal node run`'s last word on this node (nodes/<name>/agent.json); `running` false when that agent is gone. */
  /** `running`: the agent's pid alive, or null when the agent runs on another host (not judged from here; `host` names it). */
  agent?: { state: NodeAgentState["state"]; running: boolean | null; pid: number; host?: string; at: string; generation?: number; reason?: string; next?: string };
  /** Tenant streams this node stores or lists but does not serve (not running, unassigned, no leader): only when checked (`nodeStreamChecks`). */
  streams?: StreamProblem[];
  /**
   * Did the control host reach it (docs/cluster.md "Verbs through any node": its client URL within
   * NODE_ANSWER_MS)? null: not asked (no authority record to ask with).
   */
  reachable: boolean | null;
  /** How: in how long, whether its JetStream read the record (a minority node does not), and why not. */
  reach?: { jetstream: boolean | null; ms: number; why?: string };
  /** This node's own derived state (`nodeState`): a cluster's top-level state is read through the node status went through. */
  state: NodeState;
  why: string;
  /** The way out of a state this node alone is in (STREAMS UNSERVED), the root named. */
  next?: string;
}

/** A node's state, in the words of the single broker's where one fits (docs/vocabulary.md). */
export type NodeState = "stopped" | "UNREACHABLE" | "unknown" | "still admits" | "behind" | "UNPROVEN RELOAD" | "STREAMS UNSERVED" | "clean";

export interface NodeStateInput {
  running: boolean;
  /** The record, or null when it could not be read. */
  record: InventoryRecord | null;
  proof: { appliedGeneration: number; configDigest: string } | undefined;
  stillAdmits: readonly string[];
  /** sha256 of the node's own server.conf on disk (undefined: unreadable). */
  onDiskDigest: string | undefined;
  /** The node runs on another host: its server.conf is on that host's disk, not read from here; its proof (checked against its VARZ digest when a writer counted it) is the word. */
  elsewhere?: boolean;
  /** Its tenant streams as its JetStream reports them (undefined: not checked). */
  streams?: StreamCheck;
  /** Whether the control host reached it, and why not (undefined: not asked). */
  reach?: { reachable: boolean; why?: string };
}

/** Pure: one node's state, most dangerous first, from its process, its proof and its config on disk. */
export function nodeState(i: NodeStateInput): { state: NodeState; why: string } {
  if (!i.running) return { state: "stopped", why: "not running: it admits nobody; `cotal up` restarts it with every tenant held (none admitted), then applies the committed record" };
  if (i.reach && !i.reach.reachable) return { state: "UNREACHABLE", why: `its process runs, but it did not answer this host: ${i.reach.why ?? "no answer"}` };
  if (!i.record) return { state: "unknown", why: "the record could not be read" };
  if (i.stillAdmits.length > 0) return { state: "still admits", why: `has not proven the removal of ${i.stillAdmits.join(", ")} (generation ${i.record.pending?.generation ?? "?"})` };
  if (!i.proof) return { state: "behind", why: "no proof recorded" };
  if (i.proof.appliedGeneration < i.record.generation) return { state: "behind", why: `proven generation ${i.proof.appliedGeneration}, the record is at ${i.record.generation}` };
  if (!i.elsewhere && i.onDiskDigest !== i.proof.configDigest) return { state: "UNPROVEN RELOAD", why: `its server.conf is not the config it proved at generation ${i.proof.appliedGeneration}${i.record.pending ? ` (generation ${i.record.pending.generation} is in flight)` : ""}` };
  if (i.streams && "error" in i.streams) return { state: "unknown", why: `its tenant streams could not be checked: ${i.streams.error}` };
  if (i.streams && i.streams.problems.length > 0) return { state: "STREAMS UNSERVED", why: `tenant streams it hosts are not served (their writes get no reply): ${describeProblems(i.streams.problems)}` };
  return { state: "clean", why: `generation ${i.proof.appliedGeneration}, proven` };
}

/** A node with no recorded process (a stopped root): its name and listeners from settings.json. */
export type UnrecordedNode = Pick<NodeRuntime, "name" | "url" | "port" | "clusterPort"> & { owner?: undefined };

/** What `clusterNodesStatus` adds when the caller read the nodes' JetStream (`nodeStreamChecks`); `root` names the root in a node's `next`. */
export interface LiveNodeFacts {
  streams?: Readonly<Record<string, StreamCheck | undefined>>;
  root?: string;
  /** Each node as the control host reached it (verb/reach.ts `reachNodes`). */
  reach?: Readonly<Record<string, NodeReach | undefined>>;
}

/** Pure but for the liveness read of each recorded pid: the nodes, in the record's order. `digests`: each node's server.conf on disk. */
export function clusterNodesStatus(
  nodes: readonly (NodeRuntime | UnrecordedNode)[],
  record: InventoryRecord | null,
  digests: Readonly<Record<string, string | undefined>> = {},
  agents: Readonly<Record<string, NodeAgentState | undefined>> = {},
  live: LiveNodeFacts = {},
): NodeStatus[] {
  const unproven = new Set(record ? nodesNotProven(record) : []);
  const removes = record?.pending?.removes ?? [];
  return nodes.map((n) => {
    const proof = record?.nodes?.[n.name];
    // A node on another host runs if this host reached it (docs/cluster.md "Liveness by reachability").
    const running = !n.owner ? false : nodeElsewhere(n as NodeRuntime) ? live.reach?.[n.name]?.reachable === true : nodeAlive(n as NodeRuntime);
    const stillAdmits = unproven.has(n.name) ? [...removes] : [];
    const a = agents[n.name];
    const streams = running ? live.streams?.[n.name] : undefined;
    const r = live.reach?.[n.name];
    const elsewhere = !n.owner || nodeElsewhere(n as NodeRuntime);
    const own = nodeState({ running, record, proof, stillAdmits, onDiskDigest: digests[n.name], ...(elsewhere ? { elsewhere } : {}), ...(streams ? { streams } : {}), ...(r ? { reach: r } : {}) });
    return {
      name: n.name,
      // A node known from settings.json alone has no pid here (docs/cluster.md "Finding the nodes").
      pid: n.owner && !unrecorded(n as NodeRuntime) ? n.owner.pid : null,
      ...(n.owner && nodeElsewhere(n as NodeRuntime) ? { elsewhere: n.owner.host } : {}),
      url: n.url,
      port: n.port,
      clusterPort: n.clusterPort,
      running,
      appliedGeneration: proof?.appliedGeneration ?? null,
      configDigest: proof?.configDigest ?? null,
      behind: record ? (proof?.appliedGeneration ?? 0) < record.generation : null,
      stillAdmits,
      reachable: r ? r.reachable : null,
      ...(r ? { reach: { jetstream: r.jetstream, ms: r.ms, ...(r.why ? { why: r.why } : {}) } } : {}),
      ...(streams && "problems" in streams && streams.problems.length > 0 ? { streams: streams.problems } : {}),
      ...own,
      ...(own.state === "STREAMS UNSERVED" ? { next: unservedNext(live.root, n.name) } : {}),
      ...(a ? { agent: { state: a.state, running: agentRunning(a), pid: a.pid, ...(a.host ? { host: a.host } : {}), at: a.at, ...(a.generation !== undefined ? { generation: a.generation } : {}), ...(a.reason ? { reason: a.reason } : {}), ...(a.next ? { next: a.next } : {}) } } : {}),
    };
  });
}

/** The agent's pid judged on its own host only (an agent file of an older cotal names none: this host's); null elsewhere. */
function agentRunning(a: NodeAgentState): boolean | null {
  const status = ownerStatus({ pid: a.pid, host: a.host ?? hostname() });
  return status === "unknown" ? null : status === "alive";
}

/** `up` restarts a running node that does not serve its stored streams, every tenant held, then applies the record (ops/boot-cluster.ts). */
function unservedNext(root: string | undefined, node: string): string {
  return `cotal${root ? ` --root ${shellWord(root)}` : ""} up --detach   # restarts node ${node} with every tenant held, re-applies the record, waits for its streams`;
}

/**
 * The facts `clusterNodesStatus` needs to judge each running node's tenant streams: one JSZ read a
 * node (accounts, streams, groups) against the committed tenants. Nothing when the record is unread.
 */
export async function nodeStreamChecks(layout: RootLayout, nodes: readonly (NodeRuntime | UnrecordedNode)[], record: Pick<InventoryRecord, "spaces"> | null, serverVersion: string | undefined): Promise<Record<string, StreamCheck>> {
  if (!record || !serverVersion) return {};
  const tenants = tenantAccounts(layout, record.spaces);
  // A stopped (SIGSTOP) node answers nothing: status names it UNREACHABLE without waiting on it. A node
  // on another host is checked when the caller reached it (status passes only those).
  const running = nodes.filter((n): n is NodeRuntime => n.owner !== undefined && (nodeElsewhere(n as NodeRuntime) || (nodeAlive(n as NodeRuntime) && !nodeStopped(n as NodeRuntime))));
  const first: Record<string, StreamCheck> = Object.fromEntries(await Promise.all(running.map(async (n) => [n.name, await checkNodeStreams(layout, n, tenants, serverVersion, 3_000)] as const)));
  // A problem seen once may be a leader election or a stream being created: judged again for a few
  // seconds before status calls it unserved (docs/cluster.md "Restarts").
  const suspects = running.filter((n) => { const c = first[n.name]; return c !== undefined && "problems" in c && c.problems.length > 0; });
  if (suspects.length === 0) return first;
  return { ...first, ...(await waitStreamsServed(layout, suspects, tenants, serverVersion, STREAMS_SETTLE_MS)) };
}

/** How long status re-reads a node whose tenant streams looked unserved: an R3 election takes a few seconds. */
const STREAMS_SETTLE_MS = 5_000;
