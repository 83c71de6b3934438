import { existsSync } from "node:fs";
import { acquireMaintenanceLock, releaseMaintenanceLock } from "../lock/maintenance-lock.js";
import { stopBroker } from "../broker/process.js";
import { RootLayout } from "../root/layout.js";

export interface DownResult {
  root: string;
  stopped: boolean;
  pid?: number;
  forced: boolean;
}

/** Stops the root's broker under the maintenance lock; stopping a stopped broker is a no-op success. */
export async function down(opts: { root: string; graceMs?: number }): Promise<DownResult> {
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) return { root: layout.root, stopped: false, forced: false };
  const lock = acquireMaintenanceLock(layout.root, "cotal down");
  try {
    const r = await stopBroker(layout, opts.graceMs);
    return { root: layout.root, ...r };
  } finally {
    releaseMaintenanceLock(lock);
  }
}
