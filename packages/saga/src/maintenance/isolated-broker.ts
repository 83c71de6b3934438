import { type Guards } from "../guards.js";
import { CotalError, isCotalError } from "../errors.js";
import { FailpointError } from "../failpoints.js";
import type { ProcessOwner } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { startPrivateBroker, type PrivateBroker, type PrivateBrokerLabel } from "../broker/private-broker.js";

export type IsolatedBroker = PrivateBroker;

/**
 * A private broker on `storeDir` (a clone, or the real store under a ready cut) preloading ONE space:
 * no other tenant's account is loaded, so its streams are never opened. `onSpawn` journals its pid.
 */
export function startIsolatedBroker(layout: RootLayout, opts: { storeDir: string; workDir: string; space: AccountRecord; label: PrivateBrokerLabel; guards: Guards; onSpawn?: (owner: ProcessOwner) => void }): Promise<IsolatedBroker> {
  return startPrivateBroker(layout, { storeDir: opts.storeDir, workDir: opts.workDir, spaces: [opts.space], label: opts.label, guards: opts.guards, ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}) });
}

/**
 * What reaches the operator when an isolated broker's connection fails mid-attempt (the broker was
 * killed, say): a typed `snapshot-failed` with the re-run, never an untyped client error and exit 1.
 */
export function typedIsolatedFailure(err: unknown, rerun: string): unknown {
  if (isCotalError(err) || err instanceof FailpointError) return err;
  return new CotalError("snapshot-failed", `the isolated broker's connection failed mid-attempt: ${(err as Error)?.message ?? String(err)}; the attempt was undone and nothing was published`, {
    next: rerun,
    cause: err,
  });
}
