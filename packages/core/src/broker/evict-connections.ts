import { GUARDS_ON, type Guards } from "../guards.js";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FEATURE_SINCE, serverFeatures } from "./server-features.js";
import { loadBrokerTrust, type LoadedBroker } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, readTextIfExists, writeFileAtomic } from "../root/secret-files.js";
import { decodeJwt, evictorPermissions, inboxPrefixOf, mintSystemUserCreds, nativeCredsAuthenticator, parseCreds } from "../trust/index.js";

/** `$SYS.REQ.SERVER.<id>.KICK` arrived in nats-server 2.10.0; 2.9.10 cannot cut one connection. */
export const KICK_MIN_VERSION = FEATURE_SINCE.kick;

/** The broker's one connection evictor (docs/lifecycle.md): broker-scoped $SYS material, beside the seeds it derives from. */
export function evictorCredsFile(layout: RootLayout): string {
  return join(layout.brokerSecretsDir, "sys.evictor.creds");
}

function evictorIsCurrent(text: string, broker: LoadedBroker): boolean {
  try {
    const claims = decodeJwt(parseCreds(text).jwt);
    const pub = (claims.nats.pub as { allow?: unknown } | undefined)?.allow;
    const want = evictorPermissions().allowPub ?? [];
    return claims.nats.issuer_account === broker.system.publicKey && Array.isArray(pub) && [...pub].sort().join() === [...want].sort().join() && inboxPrefixOf(text) !== undefined;
  } catch {
    return false;
  }
}

/**
 * The evictor creds file, minted (or re-minted after a system-account rotation) when the system
 * signing seed is retained; undefined on a root that keeps no seed and has no current evictor.
 */
export function ensureEvictorCreds(layout: RootLayout, broker: LoadedBroker): string | undefined {
  const path = evictorCredsFile(layout);
  const existing = readTextIfExists(path);
  if (existing !== undefined && evictorIsCurrent(existing, broker)) return path;
  if (!broker.system.signingSeed) return undefined;
  const { ownInbox, ...perms } = evictorPermissions();
  ensureSecretDir(layout.brokerSecretsDir);
  writeFileAtomic(path, mintSystemUserCreds(broker.system, { name: "cotal/connection-evictor", ...perms, ownInbox }).creds);
  return path;
}

export interface EvictionResult {
  account: string;
  /** evicted: every connection found was cut; none: there was none; skipped: see reason; failed: see reason. */
  outcome: "evicted" | "none" | "skipped" | "failed";
  reason?: string;
  serverVersion?: string;
  /** Client ids the server confirmed it closed. */
  kicked: number[];
  /** Connections of the account still open after the kicks (0 unless outcome is failed). */
  remaining: number;
  /** A cluster root: each node's own pass, by node name (provision/evict-cluster.ts). */
  nodes?: Record<string, EvictionResult>;
}

interface ConnzReply {
  data?: { connections?: { cid: number; account?: string }[]; total?: number; offset?: number; limit?: number };
  error?: { code?: number; description?: string };
}

const PAGE = 1024;

/** Client ids of `account` on one server; the server-wide CONNZ with auth info names each connection's account. */
async function accountClientIds(nc: NatsConnection, serverId: string, account: string): Promise<number[]> {
  const cids: number[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const msg = await nc.request(`$SYS.REQ.SERVER.${serverId}.CONNZ`, JSON.stringify({ auth: true, limit: PAGE, offset }), { timeout: 5_000 });
    const reply = msg.json<ConnzReply>();
    if (reply.error) throw new Error(`CONNZ refused: ${reply.error.description ?? reply.error.code}`);
    const conns = reply.data?.connections ?? [];
    for (const c of conns) if (c.account === account) cids.push(c.cid);
    if (conns.length < PAGE) return cids;
  }
}

/**
 * Cuts every connection of `accountPublicKey` on the broker at `url` now, where the server supports
 * it (KICK, 2.10+). Never throws: it runs after a removal's point of no return, where a throw would
 * wedge the journal, so every failure is reported in the result instead. It lists and kicks on the
 * one server it connects to (a cluster makes one pass per node: provision/evict-cluster.ts). The
 * server-wide CONNZ carries every connection's JWT, so a broker with many connections pays for it
 * once per removal.
 */
export async function evictAccountConnections(layout: RootLayout, url: string, accountPublicKey: string, guards: Guards = GUARDS_ON): Promise<EvictionResult> {
  const base = { account: accountPublicKey, kicked: [] as number[], remaining: 0 };
  if (guards.NO_EVICT) return { ...base, outcome: "skipped", reason: "the NO_EVICT guard is switched off (test-only)" };
  let nc: NatsConnection | undefined;
  try {
    const path = ensureEvictorCreds(layout, loadBrokerTrust(layout));
    const creds = path && readTextIfExists(path);
    if (!creds) {
      return { ...base, outcome: "skipped", reason: "this root keeps no system signing seed (--single-space), so it holds no connection evictor" };
    }
    const inboxPrefix = inboxPrefixOf(creds);
    nc = await connect({ servers: url, name: "cotal-connection-evictor", authenticator: nativeCredsAuthenticator(creds), reconnect: false, timeout: 5_000, ...(inboxPrefix ? { inboxPrefix } : {}) });
    const version = nc.info?.version ?? "0.0.0";
    const serverId = nc.info?.server_id ?? "";
    if (!serverFeatures(version).kick) {
      return { ...base, serverVersion: version, outcome: "skipped", reason: `nats-server ${version} has no $SYS.REQ.SERVER.<id>.KICK (it arrived in ${KICK_MIN_VERSION}); the reload that dropped the account is what refuses its users there` };
    }
    const cids = await accountClientIds(nc, serverId, accountPublicKey);
    const kicked: number[] = [];
    const errors: string[] = [];
    for (const cid of cids) {
      const reply = (await nc.request(`$SYS.REQ.SERVER.${serverId}.KICK`, JSON.stringify({ cid }), { timeout: 5_000 })).json<ConnzReply>();
      if (reply.error) errors.push(`cid ${cid}: ${reply.error.description ?? reply.error.code}`);
      else kicked.push(cid);
    }
    const remaining = cids.length === 0 ? 0 : (await accountClientIds(nc, serverId, accountPublicKey)).length;
    if (remaining > 0) return { ...base, serverVersion: version, kicked, remaining, outcome: "failed", reason: `${remaining} connection(s) still open${errors.length ? `: ${errors.join("; ")}` : ""}` };
    return { ...base, serverVersion: version, kicked, outcome: cids.length === 0 ? "none" : "evicted" };
  } catch (err) {
    return { ...base, outcome: "failed", reason: (err as Error).message };
  } finally {
    await nc?.close().catch(() => undefined);
  }
}
