/**
 * Tenant ("space") and authority accounts: an operator-signed account JWT with JetStream on and
 * one signing key. The identity seed is dropped; users are always minted with the signing key.
 */
import { CotalError } from "../errors.js";
import { decodeJwt, signJwt, verifyJwt } from "./jwt.js";
import { DEFAULT_SPACE_QUOTA, UNLIMITED_JETSTREAM, limitsOfClaims, mergeLimits, quotaLimits, type AccountLimits } from "./limits.js";
import { createKeyPair, isPublicKey } from "./nkeys.js";

export type AccountKind = "space" | "authority";

export interface AccountTrust {
  name: string;
  kind: AccountKind;
  publicKey: string;
  jwt: string;
  signingKey: string;
  signingSeed: string;
  /** The operator public key that signed the account JWT. */
  issuer: string;
  /** The limits signed into `jwt`, kept beside it so listings and `space limits` need no decode. */
  limits: AccountLimits;
  createdAt: string;
}

/**
 * A tenant starts from its template's quota. The authority account stays unbounded: its reserve is
 * the headroom the tenants' summed caps leave under the server-wide max (docs/quotas.md).
 */
export function defaultLimits(kind: AccountKind): AccountLimits {
  return kind === "space" ? quotaLimits(DEFAULT_SPACE_QUOTA) : { ...UNLIMITED_JETSTREAM };
}

export function createAccountTrust(
  operator: { publicKey: string; seed: string },
  name: string,
  opts: { kind: AccountKind; limits?: Partial<AccountLimits> },
): AccountTrust {
  if (typeof name !== "string" || name.trim() === "") {
    throw new CotalError("invalid-argument", "an account needs a non-empty name");
  }
  if (opts.kind !== "space" && opts.kind !== "authority") {
    throw new CotalError("invalid-argument", `unknown account kind ${JSON.stringify(opts.kind)}`);
  }
  if (!isPublicKey(operator.publicKey, "operator")) {
    throw new CotalError("invalid-argument", "account JWTs must be issued by an operator public key");
  }
  const limits = mergeLimits(defaultLimits(opts.kind), opts.limits);
  const now = new Date();
  const identity = createKeyPair("account");
  const signing = createKeyPair("account");
  // signJwt refuses an operator seed that does not belong to operator.publicKey.
  const jwt = signJwt(
    {
      iat: Math.floor(now.getTime() / 1000),
      iss: operator.publicKey,
      sub: identity.publicKey,
      name,
      nats: { limits, signing_keys: [signing.publicKey], type: "account", version: 2 },
    },
    operator.seed,
  );
  return {
    name,
    kind: opts.kind,
    publicKey: identity.publicKey,
    jwt,
    signingKey: signing.publicKey,
    signingSeed: signing.seed,
    issuer: operator.publicKey,
    limits,
    createdAt: now.toISOString(),
  };
}

/**
 * The same account (subject, name, signing keys, every other claim) re-signed by its operator with
 * new limits: what `space limits` promotes. Refuses a JWT this operator did not issue.
 */
export function resignAccountLimits(operator: { publicKey: string; seed: string }, jwt: string, limits: Partial<AccountLimits>): { jwt: string; limits: AccountLimits } {
  const claims = verifyJwt(jwt);
  if (claims.iss !== operator.publicKey) {
    throw new CotalError("foreign-operator", `account ${claims.sub} is signed by operator ${claims.iss}, not this broker's ${operator.publicKey}`, { details: { account: claims.sub, issuer: claims.iss } });
  }
  if (claims.nats.type !== "account") throw new CotalError("invalid-jwt", `not an account JWT (type ${String(claims.nats.type)})`);
  const merged = mergeLimits(limitsOfClaims(claims.nats), limits);
  const resigned = signJwt({ iss: claims.iss, sub: claims.sub, name: claims.name, nats: { ...claims.nats, limits: merged } }, operator.seed);
  return { jwt: resigned, limits: merged };
}

/** The account's "revoke every user issued at or before T" time (`revocations["*"]`), if any (decoded, not verified: a read for status). */
export function revokeAllBefore(jwt: string): number | undefined {
  return revokeAllBeforeOf(decodeJwt(jwt).nats);
}

/** {@link revokeAllBefore} from claims already decoded (a record's parse decodes its JWT once). Pure. */
export function revokeAllBeforeOf(nats: Record<string, unknown>): number | undefined {
  const rev = nats.revocations as Record<string, unknown> | undefined;
  const t = rev?.["*"];
  return typeof t === "number" ? t : undefined;
}

/**
 * The same account re-signed with `revocations["*"]` set to `revokeAllBefore` (unix seconds) or
 * removed (undefined): nats-server evicts and refuses every user of the account issued at or before
 * it. The quiesce and the lift of an online backup (README: backup). Other revocations stay as they are.
 */
export function resignAccountRevocations(operator: { publicKey: string; seed: string }, jwt: string, revokeAllBefore: number | undefined): { jwt: string } {
  const claims = verifyJwt(jwt);
  if (claims.iss !== operator.publicKey) {
    throw new CotalError("foreign-operator", `account ${claims.sub} is signed by operator ${claims.iss}, not this broker's ${operator.publicKey}`, { details: { account: claims.sub, issuer: claims.iss } });
  }
  if (claims.nats.type !== "account") throw new CotalError("invalid-jwt", `not an account JWT (type ${String(claims.nats.type)})`);
  if (revokeAllBefore !== undefined && (!Number.isSafeInteger(revokeAllBefore) || revokeAllBefore <= 0)) {
    throw new CotalError("invalid-argument", `a revocation time is whole unix seconds, got ${String(revokeAllBefore)}`);
  }
  const { revocations, ...rest } = claims.nats;
  const kept: Record<string, unknown> = { ...(revocations as Record<string, unknown> | undefined) };
  delete kept["*"];
  if (revokeAllBefore !== undefined) kept["*"] = revokeAllBefore;
  // An empty map is dropped, so a lift of a JWT that had none restores its claims exactly.
  const nats = Object.keys(kept).length > 0 ? { ...rest, revocations: kept } : rest;
  return { jwt: signJwt({ iss: claims.iss, sub: claims.sub, name: claims.name, nats: nats as typeof claims.nats }, operator.seed) };
}
