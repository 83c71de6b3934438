/**
 * Per-user revocations of an account JWT (`nats.revocations: { <user key>: <unix seconds> }`):
 * nats-server refuses every JWT of that user key issued at or before the time (docs/commands/space.md
 * "space revoke"). The `"*"` entry belongs to an online backup's quiesce and is never touched here.
 */
import { CotalError } from "../errors.js";
import { decodeJwt, signJwt, verifyJwt } from "./jwt.js";
import { isPublicKey } from "./nkeys.js";

/** The account's per-user revocations (the `"*"` entry left out); decoded, not verified. Pure. */
export function userRevocationsOf(nats: Readonly<Record<string, unknown>>): Record<string, number> {
  const rev = nats.revocations as Record<string, unknown> | undefined;
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(rev ?? {})) if (k !== "*" && typeof v === "number") out[k] = v;
  return out;
}

/** {@link userRevocationsOf} of an account JWT. */
export function userRevocations(jwt: string): Record<string, number> {
  return userRevocationsOf(decodeJwt(jwt).nats);
}

/** Whether a JWT of `userKey` issued at `iat` is refused by `revocations` (the server's rule: iat ≤ time). */
export function isRevoked(revocations: Readonly<Record<string, number>>, userKey: string, iat: number): boolean {
  const t = revocations[userKey];
  return t !== undefined && iat <= t;
}

/**
 * The entries to add so every key in `keys` is revoked up to `before`: a key already revoked at or
 * after `before` is left as it is (revoking twice changes nothing). Pure.
 */
export function revocationsToAdd(current: Readonly<Record<string, number>>, keys: readonly string[], before: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) if ((current[k] ?? 0) < before) out[k] = before;
  return out;
}

/**
 * The same account re-signed by `operator` with `entries` merged into its revocations, and every
 * entry in `prune` (keys whose last cred has expired: the entry no longer refuses anything) dropped.
 */
export function resignUserRevocations(operator: { publicKey: string; seed: string }, jwt: string, entries: Readonly<Record<string, number>>, prune: readonly string[] = []): { jwt: string } {
  const claims = verifyJwt(jwt);
  if (claims.iss !== operator.publicKey) {
    throw new CotalError("foreign-operator", `account ${claims.sub} is signed by operator ${claims.iss}, not this broker's ${operator.publicKey}`, { details: { account: claims.sub, issuer: claims.iss } });
  }
  if (claims.nats.type !== "account") throw new CotalError("invalid-jwt", `not an account JWT (type ${String(claims.nats.type)})`);
  for (const [k, t] of Object.entries(entries)) {
    if (!isPublicKey(k, "user")) throw new CotalError("invalid-argument", `${JSON.stringify(k)} is not a user public key (U…)`);
    if (!Number.isSafeInteger(t) || t <= 0) throw new CotalError("invalid-argument", `a revocation time is whole unix seconds, got ${String(t)}`);
  }
  const { revocations, ...rest } = claims.nats;
  const kept: Record<string, unknown> = { ...(revocations as Record<string, unknown> | undefined) };
  for (const k of prune) if (k !== "*" && !(k in entries)) delete kept[k];
  Object.assign(kept, entries);
  const nats = Object.keys(kept).length > 0 ? { ...rest, revocations: kept } : rest;
  return { jwt: signJwt({ iss: claims.iss, sub: claims.sub, name: claims.name, nats: nats as typeof claims.nats }, operator.seed) };
}
