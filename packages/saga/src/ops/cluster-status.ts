import { nodeAlive, type NodeRuntime } from "../broker/runtime.js";
import type { InventoryRecord } from "../inventory/record.js";
import { pidAlive } from "../lock/process-identity.js";
import type { NodeAgentState } from "../root/node-state.js";
import { nodesNotProven } from "../saga/partial-proofs.js";

/** One cluster node as `cotal status` shows it: its process, and its own proof from the record. */
export interface NodeStatus {
  name: string;
  pid: number;
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
  agent?: { state: NodeAgentState["state"]; running: boolean; pid: number; at: string; generation?: number; reason?: string; next?: string };
}

/** Pure but for the liveness read of each recorded pid: the nodes, in the record's order. */
export function clusterNodesStatus(nodes: readonly NodeRuntime[], record: InventoryRecord | null, agents: Readonly<Record<string, NodeAgentState | undefined>> = {}): NodeStatus[] {
  const unproven = new Set(record ? nodesNotProven(record) : []);
  const removes = record?.pending?.removes ?? [];
  return nodes.map((n) => {
    const proof = record?.nodes?.[n.name];
    const a = agents[n.name];
    return {
      name: n.name,
      pid: n.owner.pid,
      url: n.url,
      port: n.port,
      clusterPort: n.clusterPort,
      running: nodeAlive(n),
      appliedGeneration: proof?.appliedGeneration ?? null,
      configDigest: proof?.configDigest ?? null,
      behind: record ? (proof?.appliedGeneration ?? 0) < record.generation : null,
      stillAdmits: unproven.has(n.name) ? [...removes] : [],
      ...(a ? { agent: { state: a.state, running: pidAlive(a.pid), pid: a.pid, at: a.at, ...(a.generation !== undefined ? { generation: a.generation } : {}), ...(a.reason ? { reason: a.reason } : {}), ...(a.next ? { next: a.next } : {}) } } : {}),
    };
  });
}
