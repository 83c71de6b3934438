/**
 * The signing keys of an account JWT (`nats.signing_keys`) and the users they sign: `space
 * rotate-key` adds a key, moves cotal's own creds to it, then removes the old one (docs/commands/space.md
 * "space rotate-key"). nats-server refuses a user whose issuer is not the account or one of its keys.
 */
import { CotalError } from "../errors.js";
import { decodeJwt, signJwt, verifyJwt } from "./jwt.js";
import { isPublicKey, keyPairFromSeed } from "./nkeys.js";
import { formatCreds, type UserCreds } from "./user.js";

/** The account's signing keys, as plain keys (a scoped key's `{key}` object read as its key). Pure. */
export function signingKeysOf(nats: Readonly<Record<string, unknown>>): string[] {
  const keys = nats.signing_keys;
  if (!Array.isArray(keys)) return [];
  return keys.flatMap((k: unknown) => (typeof k === "string" ? [k] : typeof k === "object" && k !== null && typeof (k as { key?: unknown }).key === "string" ? [(k as { key: string }).key] : []));
}

/** {@link signingKeysOf} of an account JWT (decoded, not verified). */
export function accountSigningKeys(jwt: string): string[] {
  return signingKeysOf(decodeJwt(jwt).nats);
}

/**
 * The same account re-signed by `operator` with `add` appended to its signing keys and `remove`
 * dropped from them; every other claim (limits, revocations) as it was. Refuses to leave no key.
 */
export function resignSigningKeys(operator: { publicKey: string; seed: string }, jwt: string, change: { add?: string; remove?: string }): { jwt: string; signingKeys: string[] } {
  const claims = verifyJwt(jwt);
  if (claims.iss !== operator.publicKey) {
    throw new CotalError("foreign-operator", `account ${claims.sub} is signed by operator ${claims.iss}, not this broker's ${operator.publicKey}`, { details: { account: claims.sub, issuer: claims.iss } });
  }
  if (claims.nats.type !== "account") throw new CotalError("invalid-jwt", `not an account JWT (type ${String(claims.nats.type)})`);
  for (const k of [change.add, change.remove]) if (k !== undefined && !isPublicKey(k, "account")) throw new CotalError("invalid-argument", `${JSON.stringify(k)} is not an account signing key (A…)`);
  const raw = Array.isArray(claims.nats.signing_keys) ? (claims.nats.signing_keys as unknown[]) : [];
  const keyOf = (k: unknown): unknown => (typeof k === "object" && k !== null ? (k as { key?: unknown }).key : k);
  const kept = raw.filter((k) => keyOf(k) !== change.remove);
  if (change.add !== undefined && !kept.some((k) => keyOf(k) === change.add)) kept.push(change.add);
  if (kept.length === 0) throw new CotalError("invalid-argument", `account ${claims.sub} would be left with no signing key`);
  const resigned = signJwt({ iss: claims.iss, sub: claims.sub, name: claims.name, nats: { ...claims.nats, signing_keys: kept } }, operator.seed);
  return { jwt: resigned, signingKeys: signingKeysOf({ signing_keys: kept }) };
}

/**
 * A user's cred re-signed by another signing key of its account: the same user key and seed, name,
 * permissions and expiry, issued now (`iat`). The caller never re-issues a revoked cred (a later
 * `iat` would escape its revocation) nor an expired one.
 */
export function reissueUserCreds(account: { publicKey: string; signingSeed: string }, userJwt: string, userSeed: string, now = Math.floor(Date.now() / 1000)): Pick<UserCreds, "publicKey" | "jwt" | "creds"> {
  const claims = decodeJwt(userJwt);
  if (claims.nats.type !== "user") throw new CotalError("invalid-jwt", `not a user JWT (type ${String(claims.nats.type)})`);
  if (keyPairFromSeed(userSeed).publicKey !== claims.sub) throw new CotalError("invalid-seed", `the creds' seed is not the key of user ${claims.sub}`);
  const signer = keyPairFromSeed(account.signingSeed);
  const jwt = signJwt({ iat: now, iss: signer.publicKey, sub: claims.sub, name: claims.name, ...(claims.exp !== undefined ? { exp: claims.exp } : {}), nats: { ...claims.nats, issuer_account: account.publicKey } }, account.signingSeed);
  return { publicKey: claims.sub, jwt, creds: formatCreds(jwt, userSeed) };
}
