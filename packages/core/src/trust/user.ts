/**
 * User credentials: a fresh user nkey plus a JWT signed by an account signing key (never the
 * account identity), packaged as the standard .creds text nats.js `credsAuthenticator` parses.
 */
import { CotalError } from "../errors.js";
import type { BrokerTrust } from "./broker.js";
import { signJwt } from "./jwt.js";
import { createKeyPair, decodeSeed, isPublicKey, keyPairFromSeed } from "./nkeys.js";
import { ownInboxPrefix } from "./permissions.js";

export interface UserCredsOptions {
  name: string;
  allowPub?: string[];
  allowSub?: string[];
  denyPub?: string[];
  denySub?: string[];
  expiresInSeconds?: number;
  /** Lets the user publish to reply subjects of requests it received (nats `resp` permission). */
  allowResponses?: boolean;
  /**
   * Adds `_INBOX_<user key>.>` to the subscribe allow list (so a user without allowSub may subscribe
   * there only): the user's replies are its own. Its client connects with `inboxPrefix`.
   */
  ownInbox?: boolean;
  /** The JWT's `iat` (whole seconds; default now): a quiesce's own user is dated after its revocation (backup/quiesce.ts). */
  issuedAt?: number;
}

export interface UserCreds {
  publicKey: string;
  seed: string;
  jwt: string;
  /** The full .creds file text. */
  creds: string;
  expiresAt?: string;
  /** With `ownInbox`: the nats.js `inboxPrefix` this user must connect with. */
  inboxPrefix?: string;
}

const SYSTEM_SEED_NEXT = "cotal down && cotal up --rotate-sys";

function invalidArgument(message: string): CotalError {
  return new CotalError("invalid-argument", message);
}

function subjectList(list: string[] | undefined, what: string): string[] | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) throw invalidArgument(`${what} must be an array of subjects`);
  for (const subject of list) {
    if (typeof subject !== "string" || subject === "" || /\s/.test(subject)) {
      throw invalidArgument(`${what} holds an invalid subject ${JSON.stringify(subject)}`);
    }
  }
  return [...list];
}

/**
 * nats-server reads an empty allow list as "no restriction", so `allowPub: []` would silently grant
 * every subject; refuse it instead of minting the opposite of what the caller meant.
 */
function permission(allow: string[] | undefined, deny: string[] | undefined, what: "pub" | "sub") {
  if (allow !== undefined && allow.length === 0) {
    throw invalidArgument(`an empty allow${what === "pub" ? "Pub" : "Sub"} would allow every subject; deny ">" instead`);
  }
  if (allow === undefined && (deny === undefined || deny.length === 0)) return undefined;
  return { ...(allow !== undefined ? { allow } : {}), ...(deny !== undefined && deny.length > 0 ? { deny } : {}) };
}

export function formatCreds(jwt: string, seed: string): string {
  if (typeof jwt !== "string" || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jwt)) {
    throw new CotalError("invalid-jwt", "creds need a compact JWT (three base64url segments)");
  }
  if (decodeSeed(seed)?.role !== "user") {
    throw new CotalError("invalid-seed", "creds need a valid user nkey seed");
  }
  return `-----BEGIN NATS USER JWT-----
${jwt}
------END NATS USER JWT------

************************* IMPORTANT *************************
NKEY Seed printed below can be used to sign and prove identity.
NKEYs are sensitive and should be treated as secrets.

-----BEGIN USER NKEY SEED-----
${seed}
------END USER NKEY SEED------

*************************************************************
`;
}

export function mintUserCreds(account: { publicKey: string; signingSeed: string }, opts: UserCredsOptions): UserCreds {
  if (typeof opts.name !== "string" || opts.name.trim() === "") throw invalidArgument("a user needs a non-empty name");
  if (!isPublicKey(account.publicKey, "account")) throw invalidArgument("users must belong to an account public key");
  const signer = keyPairFromSeed(account.signingSeed);
  if (signer.role !== "account") throw new CotalError("invalid-seed", "users must be signed with an account signing seed");
  if (
    opts.expiresInSeconds !== undefined &&
    (!Number.isSafeInteger(opts.expiresInSeconds) || opts.expiresInSeconds <= 0)
  ) {
    throw invalidArgument("expiresInSeconds must be a positive whole number");
  }
  if (opts.issuedAt !== undefined && (!Number.isSafeInteger(opts.issuedAt) || opts.issuedAt <= 0)) throw invalidArgument("issuedAt must be whole seconds since the epoch");

  const user = createKeyPair("user");
  const inboxPrefix = opts.ownInbox === true ? ownInboxPrefix(user.publicKey) : undefined;
  const allowSub = subjectList(opts.allowSub, "allowSub");
  const pub = permission(subjectList(opts.allowPub, "allowPub"), subjectList(opts.denyPub, "denyPub"), "pub");
  const sub = permission(inboxPrefix ? [...(allowSub ?? []), `${inboxPrefix}.>`] : allowSub, subjectList(opts.denySub, "denySub"), "sub");
  const iat = opts.issuedAt ?? Math.floor(Date.now() / 1000);
  const exp = opts.expiresInSeconds === undefined ? undefined : iat + opts.expiresInSeconds;

  const jwt = signJwt(
    {
      iat,
      iss: signer.publicKey,
      sub: user.publicKey,
      name: opts.name,
      ...(exp !== undefined ? { exp } : {}),
      nats: {
        ...(pub !== undefined ? { pub } : {}),
        ...(sub !== undefined ? { sub } : {}),
        // max 1 reply per request; ttl 0 lets the server apply its default window.
        ...(opts.allowResponses === true ? { resp: { max: 1, ttl: 0 } } : {}),
        subs: -1,
        data: -1,
        payload: -1,
        issuer_account: account.publicKey,
        type: "user",
        version: 2,
      },
    },
    account.signingSeed,
  );
  return {
    publicKey: user.publicKey,
    seed: user.seed,
    jwt,
    creds: formatCreds(jwt, user.seed),
    ...(exp !== undefined ? { expiresAt: new Date(exp * 1000).toISOString() } : {}),
    ...(inboxPrefix !== undefined ? { inboxPrefix } : {}),
  };
}

export function mintSystemUserCreds(system: BrokerTrust["system"], opts: UserCredsOptions): UserCreds {
  if (system.signingSeed === undefined) {
    throw new CotalError("system-seed-absent", "the system account signing seed was not retained, so no system user can be minted", {
      next: SYSTEM_SEED_NEXT,
    });
  }
  return mintUserCreds({ publicKey: system.publicKey, signingSeed: system.signingSeed }, opts);
}
