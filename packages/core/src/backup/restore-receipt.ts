/**
 * A queued restore's receipt (docs/lifecycle.md "Backup and restore"): written under the lock while
 * the tenant is still quiesced and every stream verified, so no tenant write can fall between the
 * restore and its receipt. A re-delivered job (its worker died after the restore, before the ack)
 * finds it and answers without restoring again, which would delete what the tenant wrote since.
 * Redis only schedules: whether the request already ran is decided here, on the root.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assertLockHeld, type MaintenanceLock } from "../lock/maintenance-lock.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";

export interface RestoreReceipt {
  /** The request it answers: the job's id and enqueue time (stable across retries and re-deliveries). */
  request: string;
  space: string;
  from: string;
  attemptId: string;
  /** Epoch ms: every stream verified, the tenant still quiesced. */
  verifiedAt: number;
}

function receiptsDir(layout: RootLayout): string {
  return join(layout.maintenanceDir, "restore-receipts");
}

function receiptFile(layout: RootLayout, request: string): string {
  return join(receiptsDir(layout), `${createHash("sha256").update(request).digest("hex").slice(0, 32)}.json`);
}

/** The receipt of `request` for `space`, undefined when it never got that far (or another space's). */
export function readRestoreReceipt(layout: RootLayout, request: string, space: string): RestoreReceipt | undefined {
  const text = readTextIfExists(receiptFile(layout, request));
  if (text === undefined) return undefined;
  try {
    const r = JSON.parse(text) as RestoreReceipt;
    return r.request === request && r.space === space && typeof r.attemptId === "string" ? r : undefined;
  } catch {
    return undefined; // a torn receipt is no receipt: the restore runs again, as without one
  }
}

export function writeRestoreReceipt(layout: RootLayout, heldLock: MaintenanceLock, receipt: RestoreReceipt): void {
  assertLockHeld(heldLock);
  ensureSecretDir(receiptsDir(layout));
  writeJsonAtomic(receiptFile(layout, receipt.request), receipt);
}
