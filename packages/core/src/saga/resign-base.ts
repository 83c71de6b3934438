/**
 * What every re-sign of a space's account JWT starts from (`space limits`, `space revoke`, a backup's
 * quiesce and its lift; docs/saga.md, "Limits and revocations"): a settled record, and the space's
 * account record with the broker trust that signs it.
 */
import { CotalError } from "../errors.js";
import type { VersionedRecord } from "../inventory/inventory-store.js";
import { loadBrokerTrust, type LoadedBroker } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { existingSpaceRecord } from "./materialise.js";
import { runMutation, type SagaEnv } from "./mutation.js";

/** A claim a killed writer left, or a generation not yet applied: the record is not settled. */
export function unsettled(vr: VersionedRecord): boolean {
  return Boolean(vr.record.pending) || vr.record.appliedGeneration !== vr.record.generation;
}

/**
 * Resumes a claim a killed writer left before a re-sign decides (docs/resume.md): `read` (default: a
 * fresh read) when settled, else the record as the resume left it.
 */
export async function settledRecord(env: SagaEnv, verb: string, read?: VersionedRecord): Promise<{ base: VersionedRecord | undefined; resumed: boolean }> {
  const vr = read ?? (await env.store.read());
  if (!vr || !unsettled(vr)) return { base: vr, resumed: false };
  await runMutation(env, { op: "resume", verb: `${verb} (resume)` });
  return { base: (await env.store.read()) ?? vr, resumed: true };
}

/** The space's account record a re-sign starts from; with `base`, the space must be in that record's list. */
export function resignSource(layout: RootLayout, space: string, base?: VersionedRecord): { broker: LoadedBroker; rec: AccountRecord } {
  if (base && !base.record.spaces.includes(space)) throw new CotalError("space-not-found", `space ${space} is not in the inventory`, { next: "cotal space list" });
  const broker = loadBrokerTrust(layout);
  const rec = existingSpaceRecord(layout, broker, space);
  if (!rec) throw new CotalError("render-refused", `space ${space} is in the inventory but its record is missing on disk`, { next: "cotal broker reconcile" });
  return { broker, rec };
}
