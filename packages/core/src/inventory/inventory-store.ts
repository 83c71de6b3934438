/**
 * What the saga and the resume executor need from the authority store: the inventory record (CAS)
 * and the writer lease. `AuthorityStore` is the one real implementation (nats.js KV); the in-memory
 * one in `testing/` lets `runMutation` run without a broker.
 */
import type { InventoryRecord } from "./record.js";
import type { Lease, LeaseHolder } from "./lease.js";

export interface VersionedRecord {
  record: InventoryRecord;
  revision: number;
}

export interface InventoryStore {
  /** undefined when the key is absent; "inventory-corrupt" when its bytes are unusable. */
  read(): Promise<VersionedRecord | undefined>;
  /** Create-only (the seed); an existing record ⇒ "conflict". */
  create(record: InventoryRecord): Promise<number>;
  /** CAS at `expectedRevision`; another writer moved the record first ⇒ "conflict". */
  update(record: InventoryRecord, expectedRevision: number): Promise<number>;
  /** Create-only in the TTL bucket; held by a live holder ⇒ "lease-held". `isDead` permits a takeover CAS. */
  acquireLease(key: string, holder: LeaseHolder, isDead?: (holder: LeaseHolder) => boolean): Promise<Lease>;
  /** The fence: present, unexpired, still carrying our leaseId. */
  checkLease(lease: Pick<Lease, "key" | "leaseId">): Promise<boolean>;
  /** CAS at lease.revision, resetting the TTL; lost ⇒ "lease-lost". */
  renewLease(lease: Lease): Promise<Lease>;
  /** Deletes the lease only while it is still ours; already gone is not an error. */
  releaseLease(lease: Lease): Promise<void>;
  /** After a proven reload (performance.now() of the signal): let the connection settle before writing. */
  settleAfterReload(signalledAt: number): Promise<void>;
}
