import { GUARDS_ON, type Guards } from "../guards.js";
import type { InventoryStore } from "../inventory/inventory-store.js";
import type { InventoryRecord, NodeProof, PendingMutation } from "../inventory/record.js";

const ATTEMPTS = 3;

/** The revision a partial-proof CAS read and the one it wrote: the saga's later CAS at `from` is meant at `to`. */
export interface RevisionMove {
  from: number;
  to: number;
}

/**
 * Records, in the claim, the nodes that proved its config, each as soon as it did
 * (docs/cluster.md "Partial proofs"): a CAS on the record like the proof CAS, by the lease holder
 * only, so `status` names exactly the nodes that may still admit a removed tenant. A lost CAS
 * re-reads (a lost reply across the reload may have landed); a record with no claim is left alone.
 * `appliedDigest` is the digest of the root config the reload applied: a reload of any other (a
 * rollback re-applying the committed list) proves nothing of the claim and records nothing.
 */
export async function recordPartialProofs(store: InventoryStore, leaseHeld: () => Promise<boolean>, proofs: Record<string, Omit<NodeProof, "appliedGeneration">>, appliedDigest: string | undefined): Promise<RevisionMove | undefined> {
  for (let i = 1; ; i++) {
    const cur = await store.read();
    const pending = cur?.record.pending;
    if (!cur || !pending || pending.stagedDigest === undefined || pending.stagedDigest !== appliedDigest) return undefined;
    if (!(await leaseHeld())) throw new Error("the writer lease was lost before the partial proofs were recorded");
    const stamped = Object.fromEntries(Object.entries(proofs).map(([name, p]) => [name, { ...p, appliedGeneration: pending.generation }]));
    const next: InventoryRecord = { ...cur.record, pending: { ...pending, proven: { ...pending.proven, ...stamped } } };
    try {
      return { from: cur.revision, to: await store.update(next, cur.revision) };
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

/**
 * May this claim commit with a member that is down left behind (docs/cluster.md invariant 4)? Only
 * when it removes nothing and re-signs nothing: a node behind on an add merely does not admit the
 * new tenant yet, while one behind on a removal still admits the removed one (invariant 2).
 */
export function mayLeaveNodesBehind(p: PendingMutation | null | undefined, guards: Guards = GUARDS_ON): boolean {
  if (!p) return false;
  if (guards.CLUSTER_BEHIND_ANY_OP) return true;
  return (p.op === "add" || p.op === "batch") && p.removes.length === 0 && p.limits === undefined && p.excluded === undefined;
}
