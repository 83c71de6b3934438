import { CotalError } from "../errors.js";
import { accountInventory } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { signJwt, verifyJwt } from "../trust/index.js";

// A cluster node's boot config (docs/cluster.md "Restarts"): every tenant on disk preloaded, each
// held. JetStream must know a stream's account when its meta layer recovers the assignment at boot
// (nats-server's processStreamAssignment looks the account up once; "account missing" is never
// retried when a later reload adds it), yet a node admits nobody before it applies the record.
//
// Held means a connection limit of 0, not revoked users (issue #28, the tenant's-eye suite on a
// cluster): the server then refuses a tenant's connection with "maximum account active connections
// exceeded", which clients retry as any failed reconnect. A revocation answers "Authorization
// Violation", and nats.js with default options closes for good after two of those in a row: with every
// node of a cluster held after `down`/`up`, its reconnects met two held nodes and it never came back.

const memo = new Map<string, string>();

/**
 * The account JWT re-signed with `limits.conn = 0` and its own `iat`, so the render is byte-stable
 * (the jti hashes the claims): the JetStream limits unchanged, JetStream on, no client admitted.
 */
export function heldAccountJwt(operator: { publicKey: string; seed: string }, jwt: string): string {
  const key = `${operator.publicKey} ${jwt}`;
  const known = memo.get(key);
  if (known !== undefined) return known;
  const claims = verifyJwt(jwt);
  if (claims.iss !== operator.publicKey || claims.nats.type !== "account") {
    throw new CotalError("foreign-operator", `account ${claims.sub} is not an account of operator ${operator.publicKey}; a node cannot hold it`, { details: { account: claims.sub, issuer: claims.iss } });
  }
  const limits = { ...(claims.nats.limits as Record<string, unknown> | undefined), conn: 0 };
  const held = signJwt({ iss: claims.iss, sub: claims.sub, name: claims.name, iat: claims.iat, ...(claims.exp !== undefined ? { exp: claims.exp } : {}), nats: { ...claims.nats, limits } }, operator.seed);
  memo.set(key, held);
  return held;
}

/** Pure read of claims: does this JWT hold its account (no connection admitted)? */
export function isHeldJwt(claims: { nats: Record<string, unknown> }): boolean {
  return (claims.nats.limits as Record<string, unknown> | undefined)?.conn === 0;
}

/**
 * Every readable tenant record of the root, held: the tenants a node's store may host. A record
 * that does not parse is left out (its streams then stay unassigned on that node, which status names).
 */
export function heldSpaces(layout: RootLayout): AccountRecord[] {
  const operator = loadBrokerTrust(layout).operator;
  return accountInventory(layout).spaces.map((s) => ({ ...s, jwt: heldAccountJwt(operator, s.jwt) }));
}
