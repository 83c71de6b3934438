/**
 * The users a cluster node's agent connects as (docs/cluster.md "The agent's own users"): minted on
 * the control host, where the account seeds are, and written to the node's `agent/` directory, so the
 * node's host holds two user keys (`SU`) and no account or operator seed. Each user may do only what
 * `cotal node run` does.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { GUARDS_ON, type Guards } from "../guards.js";
import { INVENTORY_BUCKET } from "../inventory/authority-store.js";
import { LEASE_BUCKET } from "../inventory/lease.js";
import { MATERIAL_BUCKET } from "../broker/material-bucket.js";
import { PROOFS_BUCKET, proofKey } from "../inventory/node-proofs.js";
import { mintSystemUserCreds, mintUserCreds } from "../trust/user.js";
import { loadAuthorityAccount, saveAuthorityAccount } from "./account-store.js";
import { decodeJwt } from "../trust/jwt.js";
import { resignUserRevocations, revocationsToAdd, userRevocations } from "../trust/user-revocations.js";
import { loadBrokerTrust, reviseSystemJwt } from "./broker-store.js";
import type { RootLayout } from "./layout.js";
import { ensureSecretDir, readTextIfExists, writeFileAtomic } from "./secret-files.js";

/**
 * What node `node`'s agent authority user may publish: read the record, the lease, the node material
 * and the proofs; take and renew the lease; write its own node's proof key; watch the record. Never
 * the record itself (docs/cluster.md "The agent's proof on its own key").
 */
export function agentAuthorityPub(node: string): string[] {
  const streams = [INVENTORY_BUCKET, LEASE_BUCKET, MATERIAL_BUCKET, PROOFS_BUCKET].map((b) => `KV_${b}`);
  const watched = `KV_${INVENTORY_BUCKET}`;
  return [
    "$JS.API.INFO",
    ...streams.flatMap((s) => [`$JS.API.STREAM.INFO.${s}`, `$JS.API.STREAM.MSG.GET.${s}`]),
    `$KV.${PROOFS_BUCKET}.${proofKey(node)}`,
    `$KV.${LEASE_BUCKET}.>`,
    `$JS.API.CONSUMER.CREATE.${watched}`,
    `$JS.API.CONSUMER.CREATE.${watched}.>`,
    `$JS.API.CONSUMER.DELETE.${watched}.>`,
    `$JS.API.CONSUMER.INFO.${watched}.>`,
    `$JS.FC.${watched}.>`,
  ];
}

/** What the agent's system user may publish: reload and ask VARZ and JSZ of a server, nothing else. */
export const AGENT_SYSTEM_PUB = ["$SYS.REQ.SERVER.*.RELOAD", "$SYS.REQ.SERVER.*.VARZ", "$SYS.REQ.SERVER.*.JSZ"];

export interface AgentCredsFiles {
  dir: string;
  authority: string;
  system: string;
}

export function agentCredsFiles(layout: RootLayout, node: string): AgentCredsFiles {
  const dir = layout.nodeAgentCredsDir(node);
  return { dir, authority: join(dir, "authority.creds"), system: join(dir, "system.creds") };
}

/**
 * Mints the node's agent users when either file is absent (the control host, at `up`); an existing
 * pair is kept, so a running agent's users stay valid. Returns whether it wrote them.
 */
export function ensureAgentCreds(layout: RootLayout, node: string, guards: Guards = GUARDS_ON): boolean {
  const f = agentCredsFiles(layout, node);
  const allow = guards.AGENT_CREDS_UNRESTRICTED ? undefined : agentAuthorityPub(node);
  // A pair minted by an older cotal with other permissions (the record's CAS) is minted again: its agent picks it up at its next connect.
  if (existsSync(f.authority) && existsSync(f.system) && samePub(readTextIfExists(f.authority), allow)) return false;
  const name = `cotal-agent-${node}`;
  const authority = mintUserCreds(loadAuthorityAccount(layout), { name, ...(allow ? { allowPub: allow } : {}), allowSub: ["_INBOX.>"] });
  const system = mintSystemUserCreds(loadBrokerTrust(layout).system, { name, allowPub: AGENT_SYSTEM_PUB, allowSub: ["_INBOX.>"] });
  ensureSecretDir(f.dir);
  writeFileAtomic(f.authority, authority.creds);
  writeFileAtomic(f.system, system.creds);
  return true;
}

/** The node's agent users, when its host has them (`undefined`: the agent falls back to the root's account records). */
export function readAgentCreds(layout: RootLayout, node: string): { authority: string; system: string } | undefined {
  const f = agentCredsFiles(layout, node);
  const authority = readTextIfExists(f.authority);
  const system = readTextIfExists(f.system);
  return authority !== undefined && system !== undefined ? { authority, system } : undefined;
}

/** Whether a creds file's user may publish exactly `allow` (undefined: no allow list at all). */
function samePub(creds: string | undefined, allow: readonly string[] | undefined): boolean {
  const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)\s+/.exec(creds ?? "")?.[1];
  if (!jwt) return false;
  try {
    const pub = (decodeJwt(jwt).nats as { pub?: { allow?: unknown } }).pub?.allow;
    return JSON.stringify(pub ?? null) === JSON.stringify(allow ?? null);
  } catch {
    return false;
  }
}

/** The user public key of a creds file's JWT (its `sub`), or undefined when the text holds none. */
export function credsUserKey(creds: string): string | undefined {
  const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)\s+/.exec(creds)?.[1];
  if (!jwt) return undefined;
  try {
    const sub = decodeJwt(jwt).sub;
    return typeof sub === "string" && sub.startsWith("U") ? sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `cotal node forget`: the forgotten node's authority user revoked in the authority account (re-signed
 * by the operator, saved atomically), so a host that kept its `authority.creds` can no longer read the
 * record or the node material once the nodes run the new account JWT. Idempotent; returns the key
 * revoked now, or undefined (no creds of its own, or already revoked).
 */
export function revokeAgentAuthority(layout: RootLayout, node: string, now = Math.floor(Date.now() / 1000)): string | undefined {
  const key = credsUserKey(readTextIfExists(agentCredsFiles(layout, node).authority) ?? "");
  if (!key) return undefined;
  const authority = loadAuthorityAccount(layout);
  const add = revocationsToAdd(userRevocations(authority.jwt), [key], now);
  if (Object.keys(add).length === 0) return undefined;
  saveAuthorityAccount(layout, { ...authority, jwt: resignUserRevocations(loadBrokerTrust(layout).operator, authority.jwt, add).jwt });
  return key;
}

/**
 * The same for its system user (RELOAD, VARZ, JSZ): revoked in the system account, re-signed by the
 * operator, so a host that kept its `system.creds` can no longer ask a node to reload or report.
 */
export function revokeAgentSystem(layout: RootLayout, node: string, now = Math.floor(Date.now() / 1000)): string | undefined {
  const key = credsUserKey(readTextIfExists(agentCredsFiles(layout, node).system) ?? "");
  if (!key) return undefined;
  const broker = loadBrokerTrust(layout);
  const add = revocationsToAdd(userRevocations(broker.system.jwt), [key], now);
  if (Object.keys(add).length === 0) return undefined;
  reviseSystemJwt(layout, broker, resignUserRevocations(broker.operator, broker.system.jwt, add).jwt);
  return key;
}
