// `@cotal/saga/root`: the records under a broker root and how they are written.
export { RootLayout, resolveRoot } from "../root/layout.js";
export { type AccountRecord } from "../root/records.js";
export { loadBrokerTrust } from "../root/broker-store.js";
export { certainInventory, loadAuthorityAccount, loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "../root/account-store.js";
export { writeFileAtomic } from "../root/secret-files.js";
export { acquireMaintenanceLock, releaseMaintenanceLock, readLockOwner } from "../lock/maintenance-lock.js";
export { isRoot, requireRoot } from "../root/require-root.js";
