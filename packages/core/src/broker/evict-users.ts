/**
 * Cuts the live connections of some users of one account (`space revoke`, docs/commands/space.md):
 * the evictor of `space rm` (evict-connections.ts), scoped by the connection's user key. A server
 * that applies a revocation also closes the revoked users' connections itself; the KICK is the
 * check that none is left. Never throws: it runs after the revocation is committed.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { GUARDS_ON, type Guards } from "../guards.js";
import { ensureEvictorCreds, KICK_MIN_VERSION, type EvictionResult } from "./evict-connections.js";
import { serverFeatures } from "./server-features.js";
import type { BrokerRuntime } from "./runtime.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { summarise } from "../provision/evict-cluster.js";
import { decodeJwt, inboxPrefixOf, nativeCredsAuthenticator } from "../trust/index.js";

export interface ConnzConn {
  cid: number;
  account?: string;
  authorized_user?: string;
  jwt?: string;
}

const PAGE = 1024;

/** The user key a CONNZ entry (asked with auth) connected as: the server's `authorized_user`, else its JWT's subject. */
function userOf(c: ConnzConn): string | undefined {
  if (c.authorized_user) return c.authorized_user;
  try {
    return c.jwt ? decodeJwt(c.jwt).sub : undefined;
  } catch {
    return undefined;
  }
}

/** The client ids among one CONNZ page that belong to `users` of `account` (pure). */
export function userConnections(conns: readonly ConnzConn[], account: string, users: ReadonlySet<string>): number[] {
  return conns.filter((c) => c.account === account && users.has(userOf(c) ?? "")).map((c) => c.cid);
}

async function userClientIds(nc: NatsConnection, serverId: string, account: string, users: ReadonlySet<string>): Promise<number[]> {
  const cids: number[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const reply = (await nc.request(`$SYS.REQ.SERVER.${serverId}.CONNZ`, JSON.stringify({ auth: true, limit: PAGE, offset }), { timeout: 5_000 })).json<{ data?: { connections?: ConnzConn[] }; error?: { description?: string } }>();
    if (reply.error) throw new Error(`CONNZ refused: ${reply.error.description ?? "?"}`);
    const conns = reply.data?.connections ?? [];
    cids.push(...userConnections(conns, account, users));
    if (conns.length < PAGE) return cids;
  }
}

/** One server's pass: list the users' connections, kick each, list again. */
async function evictOnServer(layout: RootLayout, url: string, account: string, users: ReadonlySet<string>): Promise<EvictionResult> {
  const base = { account, kicked: [] as number[], remaining: 0 };
  let nc: NatsConnection | undefined;
  try {
    const path = ensureEvictorCreds(layout, loadBrokerTrust(layout));
    const creds = path && readTextIfExists(path);
    if (!creds) return { ...base, outcome: "skipped", reason: "this root keeps no system signing seed (--single-space), so it holds no connection evictor" };
    const inboxPrefix = inboxPrefixOf(creds);
    nc = await connect({ servers: url, name: "cotal-connection-evictor", authenticator: nativeCredsAuthenticator(creds), reconnect: false, timeout: 5_000, ...(inboxPrefix ? { inboxPrefix } : {}) });
    const version = nc.info?.version ?? "0.0.0";
    const serverId = nc.info?.server_id ?? "";
    if (!serverFeatures(version).kick) {
      return { ...base, serverVersion: version, outcome: "skipped", reason: `nats-server ${version} has no KICK (it arrived in ${KICK_MIN_VERSION}); its reload of the revocation is what drops the user's connections there` };
    }
    const cids = await userClientIds(nc, serverId, account, users);
    const kicked: number[] = [];
    for (const cid of cids) {
      const reply = (await nc.request(`$SYS.REQ.SERVER.${serverId}.KICK`, JSON.stringify({ cid }), { timeout: 5_000 })).json<{ error?: unknown }>();
      if (!reply.error) kicked.push(cid);
    }
    const remaining = cids.length === 0 ? 0 : (await userClientIds(nc, serverId, account, users)).length;
    if (remaining > 0) return { ...base, serverVersion: version, kicked, remaining, outcome: "failed", reason: `${remaining} connection(s) of the revoked user(s) still open` };
    return { ...base, serverVersion: version, kicked, outcome: cids.length === 0 ? "none" : "evicted" };
  } catch (err) {
    return { ...base, outcome: "failed", reason: (err as Error).message };
  } finally {
    await nc?.close().catch(() => undefined);
  }
}

/** Cuts every connection of `userKeys` in `account` on every server of the broker (a cluster: one pass per node). */
export async function evictUserConnections(layout: RootLayout, runtime: BrokerRuntime, account: string, userKeys: readonly string[], guards: Guards = GUARDS_ON): Promise<EvictionResult> {
  const users = new Set(userKeys);
  if (guards.NO_EVICT) return { account, kicked: [], remaining: 0, outcome: "skipped", reason: "the NO_EVICT guard is switched off (test-only)" };
  if (!runtime.nodes || runtime.nodes.length === 0) return evictOnServer(layout, runtime.url, account, users);
  const nodes: Record<string, EvictionResult> = {};
  for (const n of runtime.nodes) nodes[n.name] = await evictOnServer(layout, n.url, account, users);
  return summarise(account, nodes);
}
