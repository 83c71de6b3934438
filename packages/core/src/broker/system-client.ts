import type { NatsConnection } from "@nats-io/transport-node";
import { CotalError, RERUN } from "../errors.js";
import { mintSystemUserCreds, type BrokerTrust } from "../trust/index.js";
import { connectWithCreds } from "./connect.js";

/** The server's reply to a `$SYS.REQ.SERVER.<id>.*` request (nats-server's ServerAPIResponse). */
interface ServerApiReply<T> {
  server?: { id?: string; name?: string };
  data?: T;
  error?: { code?: number; description?: string };
}

/** An account of a JSZ reply: `id` is its public key (`name` may be the JWT's name tag). */
export interface JszAccount {
  id: string;
  stream_detail?: JszStream[];
}

/** One stream of a JSZ account detail; `stream_raft_group` (2.10.4+, asked with `raft`) is its assignment's group. */
export interface JszStream {
  name: string;
  config?: Record<string, unknown>;
  cluster?: { leader?: string; replicas?: unknown[] };
  stream_raft_group?: string;
}

export type SystemReloadReply = { ok: true } | { ok: false; error: string } | { ok: undefined; lost: string };

/** The system account (its signing seed mints a user per purpose), or a node agent's own system user. */
export type SystemUser = BrokerTrust["system"] | { creds: string };

function mintUser(system: BrokerTrust["system"], jsz: boolean): string {
  return mintSystemUserCreds(system, {
    name: "cotal-reload",
    // JSZ only (the cluster's readiness check, the boot's template check): each asks nothing else.
    allowPub: jsz ? ["$SYS.REQ.SERVER.*.JSZ"] : ["$SYS.REQ.SERVER.*.RELOAD", "$SYS.REQ.SERVER.*.VARZ"],
    allowSub: ["_INBOX.>"],
    expiresInSeconds: 300,
  }).creds;
}

/** JetStream's "peer not a member" (JSClusterServerNotMemberErr): the same on 2.9.10 and 2.15.3. */
const PEER_NOT_A_MEMBER = 10044;

/**
 * A system-account user that may only ask this broker to reload and report its VARZ or JSZ (least
 * privilege); minted in memory and expiring by itself, so a crash leaks nothing usable, unless it is
 * a node agent's own.
 */
export class SystemClient {
  private constructor(
    private readonly nc: NatsConnection,
    readonly serverId: string,
  ) {}

  static async connect(url: string, system: SystemUser, opts: { timeoutMs?: number; jsz?: boolean } = {}): Promise<SystemClient> {
    // A node agent's own system user (root/agent-creds.ts) carries its permissions; the account mints one for this purpose.
    const creds = "creds" in system ? system.creds : mintUser(system, opts.jsz === true);
    // No reconnect: a server without the reload fix (FEATURE_SINCE.reloadKeepsJwtClients) drops this
    // connection during the reload it was asked for; the pending request then fails at once, not at its timeout.
    const nc = await connectWithCreds(url, creds, { name: "cotal-reload", timeoutMs: opts.timeoutMs ?? 5_000, reconnect: false });
    const id = nc.info?.server_id;
    if (!id) {
      await nc.close();
      throw new CotalError("broker-unreachable", `the broker at ${url} sent no server id`, { next: "cotal status" });
    }
    return new SystemClient(nc, id);
  }

  /** `$SYS.REQ.SERVER.<id>.RELOAD`: the server replies after it applied the config, or with why not. */
  async reload(timeoutMs: number): Promise<SystemReloadReply> {
    let msg;
    try {
      msg = await this.nc.request(`$SYS.REQ.SERVER.${this.serverId}.RELOAD`, "", { timeout: timeoutMs });
    } catch (err) {
      return { ok: undefined, lost: (err as Error).message };
    }
    const reply = parseReply(msg.string());
    if (reply === undefined) return { ok: undefined, lost: `unreadable reply ${JSON.stringify(msg.string().slice(0, 200))}` };
    if (reply.error) return { ok: false, error: reply.error.description ?? `error code ${reply.error.code ?? "?"}` };
    return { ok: true };
  }

  /** The server's own digest of the config it runs (VARZ `config_digest`, 2.11+); undefined when it reports none. */
  async configDigest(timeoutMs: number): Promise<string | undefined> {
    const msg = await this.nc.request(`$SYS.REQ.SERVER.${this.serverId}.VARZ`, "", { timeout: timeoutMs });
    const reply = parseReply<{ config_digest?: string }>(msg.string());
    if (reply?.error) throw new CotalError("broker-unreachable", `VARZ refused: ${reply.error.description ?? reply.error.code}`, { next: "cotal status" });
    const d = reply?.data?.config_digest;
    return typeof d === "string" && d !== "" ? d : undefined;
  }

  /** `$SYS.REQ.SERVER.<id>.JSZ`: this server's view of the JetStream meta group (cluster readiness). */
  async metaCluster(timeoutMs: number): Promise<{ leader?: string; size?: number; peers: { name: string; current: boolean }[] }> {
    const msg = await this.nc.request(`$SYS.REQ.SERVER.${this.serverId}.JSZ`, "", { timeout: timeoutMs });
    const reply = parseReply<{ meta_cluster?: { leader?: string; cluster_size?: number; replicas?: { name?: string; current?: boolean }[] } }>(msg.string());
    if (reply?.error) throw new CotalError("broker-unreachable", `JSZ refused: ${reply.error.description ?? reply.error.code}`, { next: "cotal status" });
    const m = reply?.data?.meta_cluster;
    return { ...(m?.leader ? { leader: m.leader } : {}), ...(m?.cluster_size !== undefined ? { size: m.cluster_size } : {}), peers: (m?.replicas ?? []).map((p) => ({ name: p.name ?? "", current: p.current === true })) };
  }

  /**
   * One page of `$SYS.REQ.SERVER.<id>.JSZ` with every account's streams and their configs (`account`:
   * that account alone). The server sorts the accounts by public key only for an offset ≥ 1 on 2.9
   * (always on 2.10+), and 2.9 answers an unknown `account` with a page of others: the caller reads
   * pages from offset 1 and asks for the accounts it did not see by name (provision/template-check.ts).
   * `raft`: each stream's assignment group too (ops/node-streams.ts).
   */
  async accountStreams(page: { offset: number; limit: number; account?: string; raft?: boolean }, timeoutMs: number): Promise<JszAccount[]> {
    const req = { accounts: true, streams: true, config: true, offset: page.offset, limit: page.limit, ...(page.account ? { account: page.account } : {}), ...(page.raft ? { raft: true } : {}) };
    const msg = await this.nc.request(`$SYS.REQ.SERVER.${this.serverId}.JSZ`, JSON.stringify(req), { timeout: timeoutMs });
    const reply = parseReply<{ account_details?: JszAccount[] }>(msg.string());
    if (reply?.error) throw new CotalError("broker-unreachable", `JSZ refused: ${reply.error.description ?? reply.error.code}`, { next: "cotal status" });
    return reply?.data?.account_details ?? [];
  }

  /**
   * `$JS.API.SERVER.REMOVE` of the peer named `name` (its `server_name`): the meta group forgets it and
   * re-places its replicas where nodes remain. "removed", or "not a member" (10044: it never joined, or
   * was removed before), else the server's refusal.
   */
  async removePeer(name: string, timeoutMs: number): Promise<"removed" | "not a member"> {
    const msg = await this.nc.request("$JS.API.SERVER.REMOVE", JSON.stringify({ peer: name }), { timeout: timeoutMs });
    const reply = JSON.parse(msg.string()) as { success?: boolean; error?: { err_code?: number; description?: string } };
    if (reply.error?.err_code === PEER_NOT_A_MEMBER) return "not a member";
    if (reply.success === true) return "removed";
    throw new CotalError("cluster-unproven", `the cluster's meta leader did not remove peer ${name}: ${reply.error?.description ?? JSON.stringify(reply).slice(0, 200)}; nothing else was changed`, { next: RERUN, details: { errCode: reply.error?.err_code } });
  }

  get closedByServer(): boolean {
    return this.nc.isClosed();
  }

  async close(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.close().catch(() => undefined);
  }
}

function parseReply<T = unknown>(text: string): ServerApiReply<T> | undefined {
  try {
    const r = JSON.parse(text) as unknown;
    return typeof r === "object" && r !== null ? (r as ServerApiReply<T>) : undefined;
  } catch {
    return undefined;
  }
}
