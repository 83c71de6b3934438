import type { InventoryStore } from "../inventory/inventory-store.js";
import type { InventoryRecord, NodeProof } from "../inventory/record.js";

const ATTEMPTS = 3;

/**
 * Records, in the claim, the nodes that proved its config while another node could not
 * (docs/cluster.md "Partial proofs"): a CAS on the record like the proof CAS, by the lease holder
 * only, so `status` names exactly the nodes that may still admit a removed tenant. A lost CAS
 * re-reads (a lost reply across the reload may have landed); a record with no claim is left alone.
 */
export async function recordPartialProofs(store: InventoryStore, leaseHeld: () => Promise<boolean>, proofs: Record<string, Omit<NodeProof, "appliedGeneration">>): Promise<void> {
  for (let i = 1; ; i++) {
    const cur = await store.read();
    const pending = cur?.record.pending;
    if (!cur || !pending) return;
    if (!(await leaseHeld())) throw new Error("the writer lease was lost before the partial proofs were recorded");
    const stamped = Object.fromEntries(Object.entries(proofs).map(([name, p]) => [name, { ...p, appliedGeneration: pending.generation }]));
    const next: InventoryRecord = { ...cur.record, pending: { ...pending, proven: { ...pending.proven, ...stamped } } };
    try {
      await store.update(next, cur.revision);
      return;
    } catch (err) {
      if (i >= ATTEMPTS) throw err;
    }
  }
}

/**
 * The member nodes that have not proven the claim `record.pending` (neither in the claim's partial
 * proofs nor in `nodes` at its generation): during a removal, exactly the nodes that may still
 * admit the removed tenants (invariant 1). Empty with no claim or on a single-broker record.
 */
export function nodesNotProven(record: InventoryRecord): string[] {
  const p = record.pending;
  if (!p || !record.members) return [];
  return record.members.filter((m) => p.proven?.[m]?.appliedGeneration !== p.generation && record.nodes?.[m]?.appliedGeneration !== p.generation);
}
