import { GUARDS_ON, type Guards } from "../guards.js";
import { RELOAD_FAILED, RELOAD_OK, logOffset, readLogSince, reloadLineDigest, tail, watchLog } from "../broker/log-proof.js";
import type { BrokerRuntime } from "../broker/runtime.js";
import { serverFeatures, type ServerFeatures } from "../broker/server-features.js";
import { SystemClient, type SystemUser } from "../broker/system-client.js";
import type { InventoryRecord, NodeProof } from "../inventory/record.js";
import type { RootLayout } from "../root/layout.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { natsConfigDigest } from "../render/nats-digest.js";

/** How the reload was asked for: the system account's RELOAD request (2.10+) or SIGHUP. */
export type ReloadVia = "request" | "signal";

export type ReloadVerdict =
  | {
      outcome: "reloaded";
      via: ReloadVia;
      line: string;
      ms: number;
      /** The server's own digest of the config it now runs (VARZ, else the log line; 2.11+). */
      serverConfigDigest?: string;
      notes?: string[];
      /** A cluster reload (saga/cluster-reloader.ts): every member node's own proof. */
      nodes?: Record<string, Omit<NodeProof, "appliedGeneration">>;
    }
  | {
      outcome: "failed";
      via: ReloadVia;
      line: string;
      logTail: string;
      ms: number;
      /** The error text of the server's RELOAD reply, when it refused that way. */
      serverError?: string;
      notes?: string[];
    }
  | { outcome: "unproven"; via: ReloadVia; logTail: string; ms: number; notes?: string[] };

export interface ReloadOptions {
  timeoutMs?: number;
  /**
   * The root: with it (and a retained system signing seed) a 2.10+ broker is asked through
   * `$SYS.REQ.SERVER.<id>.RELOAD`; without it, SIGHUP.
   */
  layout?: RootLayout;
  /** The verb's guards (RELOAD_BY_SIGNAL, LOG_FROM_START; docs/ablation.md). */
  guards?: Guards;
  /**
   * The server runs on another host: only a request to it may reload it. A SIGHUP to its recorded pid
   * would reach whatever runs under that pid here, so a request that cannot connect proves nothing.
   */
  remote?: boolean;
  /**
   * The bytes the writer renamed into the file this server reads. On a server that reports its config
   * digest (2.11+) the reload counts only if that digest is their prediction (render/nats-digest.ts):
   * the server runs exactly these bytes, not some other file. A remote node is proven that way alone.
   */
  expected?: string | Uint8Array;
  /** Who asks for the reload instead of a user the root's system account mints (a node agent's own, root/agent-creds.ts). */
  system?: SystemUser;
}

/** How long the log may lag behind a reply that already said "reloaded" (the server writes the line first). */
const SECOND_WITNESS_MS = 2_000;

/**
 * Reloads the broker and proves it (docs/saga.md, step 7). Only the log written after our request counts.
 * On 2.10+ the RELOAD reply is the proof (or the server's error text) and the success line after the
 * offset a second witness; a server without the reload fix drops our connection with the reply, and
 * then the line alone proves it, as on 2.9.10 where SIGHUP and the line are all there is. 2.9.10's
 * line carries no digest, newer servers append one, so the line is matched by its prefix.
 */
export async function reloadAndProve(runtime: BrokerRuntime, opts: ReloadOptions = {}): Promise<ReloadVerdict> {
  const features = serverFeatures(runtime.serverVersion);
  const guards = opts.guards ?? GUARDS_ON;
  // RELOAD_BY_SIGNAL: the RELOAD-reply cells' control, every reload goes by SIGHUP and the log alone.
  const system = features.reloadRequest && opts.layout && !guards.RELOAD_BY_SIGNAL ? (opts.system ?? retainedSystem(opts.layout)) : undefined;
  const predicted = features.configDigest && opts.expected !== undefined ? { digest: natsConfigDigest(opts.expected) } : undefined;
  const how: ProofPlan = { features, timeoutMs: opts.timeoutMs ?? 10_000, guards, remote: opts.remote === true, ...(predicted ? { predicted } : {}) };
  if (system) return reloadByRequest(runtime, system, how);
  if (opts.remote) return { outcome: "unproven", via: "request", logTail: `${runtime.url} is on another host and cannot be asked to reload (${features.reloadRequest ? "no system signing seed or no answer" : `nats-server ${runtime.serverVersion} has no reload request`}); a signal from here would not reach it`, ms: 0 };
  return reloadBySignal(runtime, how);
}

/** How one reload is proven: the server's features, the bound, the guards, and what its digest must be. */
interface ProofPlan {
  features: ServerFeatures;
  timeoutMs: number;
  guards: Guards;
  remote: boolean;
  /** Present when the server reports digests and the writer handed in its bytes; `digest` undefined: not of the rendered grammar. */
  predicted?: { digest: string | undefined };
}

/**
 * Why a proven reload still does not count: the server's digest is not the prediction of the bytes
 * renamed for it. `required` (a remote node, proven by the digest alone): no bytes handed in is a reason too.
 */
function otherBytes(plan: ProofPlan, digest: string | undefined, required = false): string | undefined {
  if (plan.guards.NODE_PROOF_ANY_DIGEST) return undefined;
  if (!plan.predicted) return required ? "the writer handed in no bytes to compare its digest with" : undefined;
  const want = plan.predicted.digest;
  if (want === undefined) return "the bytes renamed for it are not of the grammar cotal renders, so their digest has no prediction";
  if (digest === undefined) return `it reported no config digest (the bytes renamed for it have ${want})`;
  return digest === want ? undefined : `it runs a config of digest ${digest}, not the bytes renamed for it (${want}): another file was loaded`;
}

export function retainedSystem(layout: RootLayout): SystemUser | undefined {
  const system = loadBrokerTrust(layout).system;
  // A --single-space root drops the system signing seed by design: no system user, so SIGHUP.
  return system.signingSeed ? system : undefined;
}

async function reloadBySignal(runtime: BrokerRuntime, plan: ProofPlan, notes: string[] = []): Promise<ReloadVerdict> {
  const { features, timeoutMs, guards } = plan;
  const t0 = Date.now();
  const offset = guards.LOG_FROM_START ? 0 : logOffset(runtime.logFile);
  const extra = notes.length > 0 ? { notes } : {};
  // No pid known here (a node known from settings.json alone records 0): kill(0) would signal our own group.
  if (!(runtime.owner.pid > 1)) return { outcome: "unproven", via: "signal", logTail: `no pid of ${runtime.url} is known on this host: it is asked, never signalled`, ms: 0, ...extra };
  try {
    process.kill(runtime.owner.pid, "SIGHUP");
  } catch (err) {
    return { outcome: "unproven", via: "signal", logTail: `SIGHUP to pid ${runtime.owner.pid} failed: ${(err as Error).message}`, ms: Date.now() - t0, ...extra };
  }
  const seen = await watchLog(runtime.logFile, offset, { ok: RELOAD_OK, failed: RELOAD_FAILED }, { timeoutMs, pollMs: 5 });
  const ms = Date.now() - t0;
  if (!seen) return { outcome: "unproven", via: "signal", logTail: tail(readLogSince(runtime.logFile, offset)), ms, ...extra };
  if (seen.outcome === "failed") return { outcome: "failed", via: "signal", line: seen.line, logTail: tail(readLogSince(runtime.logFile, offset)), ms, ...extra };
  const digest = features.configDigest ? reloadLineDigest(seen.line) : undefined;
  const other = otherBytes(plan, digest);
  if (other) return { outcome: "unproven", via: "signal", logTail: `${seen.line}\n${other}`, ms, ...extra };
  return { outcome: "reloaded", via: "signal", line: seen.line, ms, ...(digest ? { serverConfigDigest: digest } : {}), ...extra };
}

async function reloadByRequest(runtime: BrokerRuntime, system: SystemUser, plan: ProofPlan): Promise<ReloadVerdict> {
  const { features, timeoutMs, guards, remote } = plan;
  const t0 = Date.now();
  let client: SystemClient;
  try {
    client = await SystemClient.connect(runtime.url, system, { timeoutMs: Math.min(timeoutMs, 5_000) });
  } catch (err) {
    if (remote) return { outcome: "unproven", via: "request", logTail: `no system connection to ${runtime.url} on another host (${(err as Error).message}): it was not asked to reload`, ms: Date.now() - t0 };
    // Nothing was asked yet, so the signal path is safe: it proves the reload from the log alone.
    return reloadBySignal(runtime, plan, [`no system connection (${(err as Error).message}); reloaded by SIGHUP`]);
  }
  const notes: string[] = [];
  try {
    const offset = guards.LOG_FROM_START ? 0 : logOffset(runtime.logFile);
    const reply = await client.reload(timeoutMs);
    const since = () => readLogSince(runtime.logFile, offset);
    if (reply.ok === false) {
      return { outcome: "failed", via: "request", line: `nats-server refused the reload: ${reply.error}`, serverError: reply.error, logTail: tail(`nats-server replied: ${reply.error}\n${since()}`), ms: Date.now() - t0 };
    }
    if (remote && features.configDigest) return await proveByDigest(client, runtime, system, plan, { t0, replied: reply.ok === true, notes });
    if (reply.ok === undefined) notes.push(`the RELOAD reply was lost (${reply.lost}); the log line is the only witness`);
    const left = Math.max(0, timeoutMs - (Date.now() - t0));
    const seen = await watchLog(runtime.logFile, offset, { ok: RELOAD_OK }, { timeoutMs: reply.ok ? Math.min(left, SECOND_WITNESS_MS) : left, pollMs: 5 });
    if (!seen) {
      const why = reply.ok ? "the server replied success, but its log after the request shows no reload line" : "no reply and no reload line after the request";
      return { outcome: "unproven", via: "request", logTail: tail(`${why}\n${since()}`), ms: Date.now() - t0, notes };
    }
    const ms = Date.now() - t0;
    if (!features.configDigest) return { outcome: "reloaded", via: "request", line: seen.line, ms, ...(notes.length ? { notes } : {}) };
    const fromLog = reloadLineDigest(seen.line);
    const fromVarz = await varzDigest(client, runtime, system, timeoutMs, notes);
    if (fromLog && fromVarz && fromLog !== fromVarz) {
      return { outcome: "unproven", via: "request", logTail: tail(`the reload line names ${fromLog} but VARZ reports ${fromVarz}: another config was loaded since\n${since()}`), ms, notes };
    }
    const digest = fromVarz ?? fromLog;
    const other = otherBytes(plan, digest);
    if (other) return { outcome: "unproven", via: "request", logTail: tail(`${other}\n${since()}`), ms, notes };
    return { outcome: "reloaded", via: "request", line: seen.line, ms, ...(digest ? { serverConfigDigest: digest } : {}), ...(notes.length ? { notes } : {}) };
  } finally {
    await client.close();
  }
}

/**
 * A node on another host (docs/cluster.md "Proof by the server's digest"): its log is on its own disk,
 * so its word is the RELOAD reply and VARZ's `config_digest`, which must be the prediction of the bytes
 * renamed for it. A lost reply may still be a reload under way: VARZ is read until it names them or time runs out.
 */
async function proveByDigest(client: SystemClient, runtime: BrokerRuntime, system: SystemUser, plan: ProofPlan, at: { t0: number; replied: boolean; notes: string[] }): Promise<ReloadVerdict> {
  const { t0, notes } = at;
  if (!at.replied) notes.push("the RELOAD reply was lost; VARZ's config digest is the only witness");
  let seen: string | undefined;
  let other: string | undefined;
  for (;;) {
    seen = await varzDigest(client, runtime, system, plan.timeoutMs, notes);
    other = seen === undefined ? "it reported no config digest" : otherBytes(plan, seen, true);
    if (other === undefined || at.replied || Date.now() - t0 > plan.timeoutMs) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ms = Date.now() - t0;
  if (other !== undefined) return { outcome: "unproven", via: "request", logTail: `node at ${runtime.url} on another host: ${other}`, ms, notes };
  return { outcome: "reloaded", via: "request", line: `VARZ config_digest ${seen ?? ""}: the bytes renamed for it`, ms, ...(seen ? { serverConfigDigest: seen } : {}), ...(notes.length ? { notes } : {}) };
}

/** VARZ on our connection, or on a fresh one when the reload dropped it (servers without the fix). */
async function varzDigest(client: SystemClient, runtime: BrokerRuntime, system: SystemUser, timeoutMs: number, notes: string[]): Promise<string | undefined> {
  let c = client;
  try {
    if (client.closedByServer) c = await SystemClient.connect(runtime.url, system, { timeoutMs: Math.min(timeoutMs, 5_000) });
    return await c.configDigest(Math.min(timeoutMs, 5_000));
  } catch (err) {
    notes.push(`VARZ unreadable (${(err as Error).message}); the digest comes from the reload line`);
    return undefined;
  } finally {
    if (c !== client) await c.close();
  }
}

/**
 * The record field a proven reload leaves: the server's digest paired with the bytes it ran, or
 * undefined (dropped from the JSON) so an older pair never outlives the config it described.
 */
export function serverDigestField(verdict: ReloadVerdict, configDigest: string | null | undefined): Pick<InventoryRecord, "serverConfigDigest"> {
  const digest = verdict.outcome === "reloaded" ? verdict.serverConfigDigest : undefined;
  return { serverConfigDigest: digest && configDigest ? { digest, forConfigDigest: configDigest } : undefined };
}
