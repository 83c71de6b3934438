// @cotal/core/inventory: the authority record, its store and lease, and the writer below the verbs, for benchmarks and live tests that forge or drive them.
export { AuthorityStore, INVENTORY_BUCKET, INVENTORY_KEY, isCasLoss } from "../inventory/authority-store.js";
export { claimedSpaces, seedRecord, type InventoryRecord } from "../inventory/record.js";
export { LEASE_BUCKET, LEASE_TTL_MS, type Lease } from "../inventory/lease.js";
export { decisionRead, intentDelta, runMutation } from "../saga/mutation.js";
export { openLiveSession } from "../verb/session.js";
export { nodeAsk, writeNodeAsk } from "../inventory/node-ask.js";
