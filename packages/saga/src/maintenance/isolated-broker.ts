import type { ProcessOwner } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { startPrivateBroker, type PrivateBroker, type PrivateBrokerLabel } from "../broker/private-broker.js";

export type IsolatedBroker = PrivateBroker;

/**
 * A private broker on `storeDir` (a clone, or the real store under a ready cut) preloading ONE space:
 * no other tenant's account is loaded, so its streams are never opened. `onSpawn` journals its pid.
 */
export function startIsolatedBroker(layout: RootLayout, opts: { storeDir: string; workDir: string; space: AccountRecord; label: PrivateBrokerLabel; onSpawn?: (owner: ProcessOwner) => void }): Promise<IsolatedBroker> {
  return startPrivateBroker(layout, { storeDir: opts.storeDir, workDir: opts.workDir, spaces: [opts.space], label: opts.label, ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}) });
}
