/**
 * The agents' proofs (docs/cluster.md "The agent's proof on its own key"): each `cotal node run` writes
 * what it proved of its own node to a key of its own in `cotal_node_proofs`, never the record, so a
 * node's host can vouch for its node and for nothing else. Readers (`status`, the agent itself) lay
 * these proofs over the record's; the record itself is written by the control host's writer alone.
 */
import type { MaterialKv } from "../broker/material-bucket.js";
import type { InventoryRecord, NodeProof } from "./record.js";

export const PROOFS_BUCKET = "cotal_node_proofs";
const FORMAT = "cotal.node-proof/1";

/** The key of node `node`'s proof: the one subject its agent's user may publish to in the bucket. */
export function proofKey(node: string): string {
  return `node.${node}`;
}

/** What an agent proved: the list of `generation` (committed), or, with `claim`, the claim's staged list at its generation. */
export interface AgentProof extends Omit<NodeProof, "appliedGeneration"> {
  format: typeof FORMAT;
  node: string;
  generation: number;
  /** The claim's `stagedDigest` when the node runs exactly the claim's list (a partial proof). */
  claim?: string;
  /** The writer's ask this proof answers (inventory/node-ask.ts): that writer counts only such a proof. */
  ask?: string;
}

export function agentProof(node: string, generation: number, proof: Omit<NodeProof, "appliedGeneration">, claim?: string, ask?: string): AgentProof {
  return { format: FORMAT, node, generation, ...(claim !== undefined ? { claim } : {}), ...(ask !== undefined ? { ask } : {}), ...proof };
}

/** Pure: a stored proof, or undefined for anything else (a proof is advisory: a malformed one proves nothing). */
export function parseAgentProof(bytes: Uint8Array | undefined, node: string): AgentProof | undefined {
  const p = jsonOf(bytes) as Partial<AgentProof> | null | undefined;
  if (typeof p !== "object" || p === null || p.format !== FORMAT || p.node !== node) return undefined;
  if (!Number.isSafeInteger(p.generation) || (p.generation as number) < 1 || typeof p.configDigest !== "string" || typeof p.provenAt !== "string") return undefined;
  if ((p.claim !== undefined && typeof p.claim !== "string") || (p.ask !== undefined && typeof p.ask !== "string") || (p.serverConfigDigest !== undefined && typeof p.serverConfigDigest !== "string")) return undefined;
  return p as AgentProof;
}

/** Pure: the JSON a stored value holds, or undefined when it is absent or not JSON (a public bucket's values are advisory). */
export function jsonOf(bytes: Uint8Array | undefined): unknown {
  if (!bytes) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

export async function writeAgentProof(kv: MaterialKv, proof: AgentProof): Promise<void> {
  await kv.put(proofKey(proof.node), new TextEncoder().encode(JSON.stringify(proof)));
}

/** Each member's stored proof (absent ones left out): one read a member. */
export async function readAgentProofs(kv: MaterialKv, members: readonly string[]): Promise<AgentProof[]> {
  const read = await Promise.all(members.map(async (m) => parseAgentProof(await kv.get(proofKey(m)), m)));
  return read.filter((p): p is AgentProof => p !== undefined);
}

/**
 * Pure: the record as the agents' proofs complete it. A member's proof of the committed generation
 * counts where the record has it behind; a proof of the claim standing (its staged digest and its
 * generation) counts as that claim's partial proof. Any other proof (an older generation, another
 * claim, a node that is not a member) changes nothing: a proof never moves a node backwards.
 */
export function withAgentProofs(record: InventoryRecord, proofs: readonly AgentProof[]): InventoryRecord {
  let out = record;
  for (const p of proofs) {
    if (!record.members?.includes(p.node)) continue;
    const { format: _f, node, generation, claim, ask: _a, ...proof } = p;
    const pending = out.pending;
    if (claim !== undefined) {
      if (!pending || claim !== pending.stagedDigest || generation !== pending.generation || pending.proven?.[node]?.appliedGeneration === generation) continue;
      out = { ...out, pending: { ...pending, proven: { ...pending.proven, [node]: { ...proof, appliedGeneration: generation } } } };
    } else if (generation === out.generation && (out.nodes?.[node]?.appliedGeneration ?? 0) < generation) {
      out = { ...out, nodes: { ...out.nodes, [node]: { ...proof, appliedGeneration: generation } } };
    }
  }
  return out;
}
