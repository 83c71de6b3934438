// `@cotal/saga/inventory`: the KV record the saga decides from, its store and the writer lease.
export { AuthorityStore, INVENTORY_BUCKET, INVENTORY_KEY, isCasLoss } from "../inventory/authority-store.js";
export { claimedSpaces, seedRecord, type InventoryRecord, type PendingMutation } from "../inventory/record.js";
export { LEASE_BUCKET, LEASE_TTL_MS, type Lease } from "../inventory/lease.js";
export type { InventoryStore } from "../inventory/inventory-store.js";
