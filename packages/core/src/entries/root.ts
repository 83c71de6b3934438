// @cotal/core/root: a root's records and lock, read and written directly by benchmarks, live tests and the jobs' blocked-retry probe.
export { type AccountRecord } from "../root/records.js";
export { loadBrokerTrust } from "../root/broker-store.js";
export { certainInventory, loadAuthorityAccount, loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "../root/account-store.js";
export { writeFileAtomic } from "../root/secret-files.js";
export { treeBytes } from "../root/tree-bytes.js";
export { acquireMaintenanceLock, releaseMaintenanceLock, readLockOwner } from "../lock/maintenance-lock.js";
export { requireRoot } from "../root/require-root.js";
export { nodeDirOf } from "../root/node-dir.js";
