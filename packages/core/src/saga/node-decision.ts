import { GUARDS_ON, type Guards } from "../guards.js";
import { claimedSpaces, type InventoryRecord, type NodeProof } from "../inventory/record.js";

// The pure decisions of `cotal node run` (docs/cluster.md "cotal node"): which tenants its own node
// may run, and whether the node must be (re-)applied. The agent (ops/node-agent.ts) does the I/O.

/**
 * The tenants a node may run: the committed list without what a pending claim removes (the safe
 * side: a removal in flight is never re-admitted), and without what it adds (not committed yet).
 */
export function nodeAllowedSpaces(record: Pick<InventoryRecord, "spaces" | "pending">, guards: Guards = GUARDS_ON): string[] {
  const removes = new Set(guards.NODE_ADMITS_PENDING_REMOVES ? [] : (record.pending?.removes ?? []));
  return record.spaces.filter((s) => !removes.has(s));
}

/**
 * May the agent record its apply of `nodeAllowedSpaces` as the claim's partial proof? Only when that
 * list is exactly what the claim commits (it adds and re-signs nothing), so the proof is honest.
 */
export function allowedIsClaimList(record: Pick<InventoryRecord, "spaces" | "pending">, guards: Guards = GUARDS_ON): boolean {
  const p = record.pending;
  if (!p || p.adds.length > 0 || p.limits !== undefined) return false;
  const claimed = claimedSpaces(record.spaces, p);
  const allowed = nodeAllowedSpaces(record, guards);
  return claimed.length === allowed.length && claimed.every((s, i) => s === allowed[i]);
}

/** What the agent saw of its own node this round. */
export interface NodeObservation {
  running: boolean;
  /** `pid:procStart` of the running server: a change means it restarted. */
  serverKey?: string;
  /** When this agent first saw that server running (ms since the epoch): a proof older than that is of another process. */
  serverSeenAt?: number;
  /** sha256 of nodes/<name>/server.conf. */
  diskDigest?: string;
  /** What this agent itself last proved: on which server, which bytes. */
  applied?: { serverKey: string; digest: string };
}

export type NodeDecision = { apply: true; why: string } | { apply: false; why: string };

/**
 * Must the agent apply `desiredDigest` (the render of `nodeAllowedSpaces` for this node) to its node?
 * Not when the bytes on disk are those and this very server was proven to load them: by this agent,
 * or, with nothing pending, by the record's proof of the committed generation made after the agent
 * first saw this server run (any writer's, e.g. a cluster reload). Anything else applies again.
 */
export function nodeNeedsApply(record: InventoryRecord, node: string, desiredDigest: string, seen: NodeObservation): NodeDecision {
  if (!seen.running || seen.serverKey === undefined) return { apply: true, why: "its server is not running" };
  if (seen.diskDigest !== desiredDigest) return { apply: true, why: record.pending ? `its config is not the committed list without the pending claim's removes (generation ${record.pending.generation})` : `its config is not generation ${record.generation}'s list` };
  if (seen.applied && seen.applied.serverKey === seen.serverKey && seen.applied.digest === desiredDigest) return { apply: false, why: "proven by this agent" };
  const proof: NodeProof | undefined = record.nodes?.[node];
  if (record.pending === null && proof && proof.appliedGeneration === record.generation && proof.configDigest === desiredDigest && seen.serverSeenAt !== undefined && Date.parse(proof.provenAt) >= seen.serverSeenAt) {
    return { apply: false, why: `proven at generation ${record.generation}` };
  }
  if (seen.applied && seen.applied.serverKey !== seen.serverKey) return { apply: true, why: "its server restarted since its last proof" };
  if (!proof || proof.appliedGeneration < record.generation) return { apply: true, why: `its proof (generation ${proof?.appliedGeneration ?? "none"}) is behind the committed generation ${record.generation}` };
  return { apply: true, why: "this server's load of the committed list is not proven yet" };
}

/** The record with this node's fresh proof of the committed generation (the proof CAS's value; nothing else changes). */
export function withNodeProof(record: InventoryRecord, node: string, proof: Omit<NodeProof, "appliedGeneration">): InventoryRecord {
  return { ...record, nodes: { ...record.nodes, [node]: { ...proof, appliedGeneration: record.generation } } };
}
