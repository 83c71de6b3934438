/**
 * Tenant ("space") and authority accounts: an operator-signed account JWT with JetStream on and
 * one signing key. The identity seed is dropped; users are always minted with the signing key.
 */
import { SagaError } from "../errors.js";
import { signJwt } from "./jwt.js";
import { UNLIMITED_JETSTREAM, mergeLimits, type AccountLimits } from "./limits.js";
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
  createdAt: string;
}

export function createAccountTrust(
  operator: { publicKey: string; seed: string },
  name: string,
  opts: { kind: AccountKind; limits?: Partial<AccountLimits> },
): AccountTrust {
  if (typeof name !== "string" || name.trim() === "") {
    throw new SagaError("invalid-argument", "an account needs a non-empty name");
  }
  if (opts.kind !== "space" && opts.kind !== "authority") {
    throw new SagaError("invalid-argument", `unknown account kind ${JSON.stringify(opts.kind)}`);
  }
  if (!isPublicKey(operator.publicKey, "operator")) {
    throw new SagaError("invalid-argument", "account JWTs must be issued by an operator public key");
  }
  const limits = mergeLimits(UNLIMITED_JETSTREAM, opts.limits);
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
    createdAt: now.toISOString(),
  };
}
