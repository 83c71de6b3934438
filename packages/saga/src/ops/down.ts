import { existsSync } from "node:fs";
import { acquireMaintenanceLock, releaseMaintenanceLock } from "../lock/maintenance-lock.js";
import { stopBroker } from "../broker/process.js";
import { reapLeakedMaintenanceBrokers } from "../broker/server-scan.js";
import { journaledAttemptDir } from "../maintenance/attempt.js";
import { RootLayout } from "../root/layout.js";
import { preserveStateCut, type CutResult } from "../maintenance/cut.js";

export interface DownResult {
  root: string;
  stopped: boolean;
  pid?: number;
  forced: boolean;
  /** Unrecorded servers of this root that were stopped too. */
  strays?: number[];
  /** Set by `--preserve-state`: the cut journal reached ready. */
  cut?: Omit<CutResult, "stopped" | "pid" | "forced">;
}

/** Stops the root's broker under the maintenance lock; stopping a stopped broker is a no-op success. */
export async function down(opts: { root: string; graceMs?: number; preserveState?: boolean }): Promise<DownResult> {
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) return { root: layout.root, stopped: false, forced: false };
  const lock = acquireMaintenanceLock(layout.root, "cotal down");
  try {
    // Leaked private brokers first (a killed verb's, never the journal's own attempt): `down` is the
    // printed way out of a stray, so it must stop every server no live verb owns.
    const reaped = await reapLeakedMaintenanceBrokers(layout, journaledAttemptDir(layout));
    // Hook (maintenance/cut.ts): the cut journals cut-intent → cut-committed, stops the broker, then ready.
    if (opts.preserveState) {
      const { stopped, pid, forced, ...cut } = await preserveStateCut(layout, lock, opts.graceMs);
      return { root: layout.root, stopped, ...(pid !== undefined ? { pid } : {}), forced, cut };
    }
    const r = await stopBroker(layout, opts.graceMs);
    return { root: layout.root, ...r, stopped: r.stopped || reaped.length > 0, strays: [...reaped, ...r.strays] };
  } finally {
    releaseMaintenanceLock(lock);
  }
}
