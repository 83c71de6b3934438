/**
 * Step 4 of a `space limits` mutation and its undo: the one account record whose JWT the claim
 * re-signs. Both directions are idempotent, so any crash point resumes (docs/quotas.md).
 */
import { type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import type { LimitsChange } from "../inventory/record.js";
import { loadSpaceAccount, saveSpaceAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { decodeJwt } from "../trust/index.js";
import { limitsOfClaims } from "../trust/limits.js";

function writeJwt(layout: RootLayout, change: LimitsChange, jwt: string): void {
  const rec = loadSpaceAccount(layout, change.space);
  if (!rec) {
    throw new CotalError("render-refused", `space ${change.space} has no record on disk; its limits cannot be changed`, { next: "cotal broker reconcile", details: { space: change.space } });
  }
  if (rec.jwt === jwt) return;
  const claims = decodeJwt(jwt);
  if (claims.sub !== rec.publicKey) throw new CotalError("account-mismatch", `the claimed JWT for space ${change.space} names account ${claims.sub}, not ${rec.publicKey}`, { next: "cotal broker reconcile" });
  saveSpaceAccount(layout, { ...rec, jwt, limits: limitsOfClaims(claims.nats) });
}

/** Forward: the record carries the re-signed JWT (the render that follows stages it). */
export function applyLimitsChange(layout: RootLayout, change: LimitsChange): void {
  writeJwt(layout, change, change.to);
}

/** Back: a record still carrying the claimed JWT gets the one it had; any other JWT is left alone. */
export function restoreLimitsChange(layout: RootLayout, change: LimitsChange, guards: Guards): boolean {
  // KEEP_LIMITS_RECORD: the rollback cell's positive control, a rolled-back claim leaves the re-signed record.
  if (guards.KEEP_LIMITS_RECORD) return false;
  const rec = loadSpaceAccount(layout, change.space);
  if (!rec || rec.jwt !== change.to) return false;
  writeJwt(layout, change, change.from);
  return true;
}
