/**
 * The authority store (docs/saga.md, "The authority store"): the inventory record and the writer lease, two KV buckets in the
 * broker-authority account. Every write is a revision-pinned CAS; a CAS whose reply is lost is
 * settled by reading the key back, never by a blind retry and never by assuming it failed.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { InvalidArgumentError, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, StorageType, jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { Kvm, KvWatchInclude, type KV, type KvEntry } from "@nats-io/kv";
import { connectAsAccount } from "../broker/connect.js";
import { serverFeatures } from "../broker/server-features.js";
import { isCotalError, RERUN, CotalError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";
import { parseInventoryRecord, type InventoryRecord } from "./record.js";
import type { InventoryStore, VersionedRecord } from "./inventory-store.js";
import {
  LEASE_BUCKET,
  LEASE_TTL_MS,
  assertLeaseKey,
  encodeLeaseValue,
  leaseHeldError,
  leaseLostError,
  leaseRemainingMs,
  newLeaseValue,
  parseLeaseValue,
  type Lease,
  type LeaseHolder,
  type LeaseValue,
} from "./lease.js";

export { LEASE_BUCKET, LEASE_TTL_MS, type Lease, type LeaseHolder } from "./lease.js";
export type { InventoryStore, VersionedRecord } from "./inventory-store.js";

/** No space token in either bucket name, on purpose: whole-broker resources (docs/saga.md, "The authority store"). */
export const INVENTORY_BUCKET = "cotal_broker_inventory";
export const INVENTORY_KEY = "inventory";

export interface AuthorityStoreOptions {
  /** Connection name the broker shows for this client. */
  name?: string;
  /** Connect timeout and per-request JetStream timeout. Default 5 s. */
  timeoutMs?: number;
  /** How long a write or read waits for the connection to come back (every reload drops it). Default 15 s. */
  reconnectWaitMs?: number;
  /** max_age of the lease bucket; an existing bucket with another TTL is refused. Default LEASE_TTL_MS. */
  leaseTtlMs?: number;
  /** Lifetime of the in-memory user minted for this connection. Default: connectAsAccount's. */
  userTtlSeconds?: number;
  /**
   * Replicas of both buckets: created with, and an existing bucket checked for, this many (a cluster
   * root's settings, root/cluster-settings.ts). Absent: the server's default, and not checked (one broker).
   */
  replicas?: number;
  /** The verb's guards (docs/ablation.md): IGNORE_RECORD_SIZE. */
  guards?: Guards;
}

const CAS_LOSS_CODES: ReadonlySet<number> = new Set([JetStreamApiCodes.StreamWrongLastSequence, JetStreamApiCodes.StreamWrongLastSequenceUnknown]);
/** nats-server's JSStreamMessageExceedsMaximumErr: the stored message would pass a size limit. */
const MESSAGE_TOO_LARGE = 10054;
/** Bytes of a KV put besides the value that count against max_payload (the expected-sequence header). */
export const PUT_OVERHEAD = 256;
/**
 * A claim (pending, not yet staged) grows by the staged digest, then by the proof's digests, before
 * its commit (which is no larger: `spaces` with the adds, where the claim holds `spaces` and its adds
 * and mints; docs/saga.md "The claim"). Checking the claim with this room
 * refuses before the first write a saga whose later writes would not fit.
 */
export const CLAIM_GROWTH = 512;
/** A write still queued inside the server when we first read back gets this long to land. */
const SETTLE_MS = 250;
/** Re-sends of a CAS whose reply was lost while the key provably stayed at the expected revision. */
const RESENDS = 3;
const ACQUIRE_ATTEMPTS = 3;
const UNREACHABLE_NEXT = `cotal status && ${RERUN}   # is the broker running? cotal up --detach starts it`;
/** For refusals only a caller bug can reach: nothing was written, and there is nothing to repair. */
const BUG_EXIT = "nothing was written; report this message as a cotal bug";

/** The JetStream API err_code of `err` itself, or undefined. Never inferred from message text. */
function apiErrCode(err: unknown): number | undefined {
  if (err instanceof JetStreamApiError) return err.code;
  // Duck-typed fallback in case two copies of @nats-io/jetstream are ever loaded side by side.
  const apiError = (err as { apiError?: unknown } | null)?.apiError;
  if (typeof apiError === "function") {
    const code = (apiError.call(err) as { err_code?: unknown } | undefined)?.err_code;
    if (typeof code === "number") return code;
  }
  return undefined;
}

/** True when `err` (or anything in its `cause` chain) is a lost CAS: err_code 10071 or 10164. */
export function isCasLoss(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e !== null && e !== undefined && depth < 16; depth++) {
    const code = apiErrCode(e);
    if (code !== undefined && CAS_LOSS_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function unreachable(what: string, cause: unknown): CotalError {
  const code = apiErrCode(cause) ?? apiErrCode((cause as { cause?: unknown } | null)?.cause);
  return new CotalError("inventory-unreachable", `cannot ${what}: ${describe(cause)}`, {
    next: UNREACHABLE_NEXT,
    details: code === undefined ? undefined : { errCode: code },
    cause,
  });
}

function busy(what: string, cause: unknown): CotalError {
  return new CotalError("inventory-busy", `cannot ${what} yet: ${describe(cause)}`, {
    next: `${RERUN}   # the broker was busy reloading; nothing was decided on a missing answer`,
    cause,
  });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface BucketSpec {
  bucket: string;
  /** max_age in ms; 0 = never expires. */
  ttlMs: number;
  replicas?: number;
}

/** Why an existing bucket's stream is not the shape cotal creates (empty when it is). */
function shapeProblems(cfg: StreamConfig, spec: BucketSpec): string[] {
  const problems: string[] = [];
  const subject = `$KV.${spec.bucket}.>`;
  if (cfg.storage !== StorageType.File) problems.push(`storage is ${String(cfg.storage)}, not file`);
  if (cfg.max_msgs_per_subject !== 1) problems.push(`history (max_msgs_per_subject) is ${cfg.max_msgs_per_subject}, not 1`);
  // Direct Get may answer from a follower; every fence here needs leader-served, read-your-writes reads.
  if (cfg.allow_direct === true) problems.push("allow_direct is true");
  if ((cfg.max_age ?? 0) !== spec.ttlMs * 1_000_000) problems.push(`max_age is ${(cfg.max_age ?? 0) / 1e6} ms, not ${spec.ttlMs} ms`);
  if (!Array.isArray(cfg.subjects) || cfg.subjects.length !== 1 || cfg.subjects[0] !== subject) problems.push(`subjects are ${JSON.stringify(cfg.subjects)}, not ["${subject}"]`);
  if (cfg.mirror || (cfg.sources?.length ?? 0) > 0) problems.push("it mirrors or sources another stream");
  if (cfg.sealed === true) problems.push("it is sealed");
  if (spec.replicas !== undefined && cfg.num_replicas !== spec.replicas) problems.push(`replicas is ${cfg.num_replicas}, not ${spec.replicas}`);
  return problems;
}

/** The two calls bucket creation needs, so the create race can be exercised without a server. */
export interface BucketApi {
  jsm: { streams: Pick<JetStreamManager["streams"], "info"> };
  kvm: Pick<Kvm, "create" | "open">;
}

async function streamConfig(jsm: BucketApi["jsm"], stream: string): Promise<StreamConfig | undefined> {
  try {
    return (await jsm.streams.info(stream)).config;
  } catch (err) {
    if (apiErrCode(err) === JetStreamApiCodes.StreamNotFound) return undefined;
    throw err;
  }
}

/** How long a losing concurrent creator keeps re-creating a bucket that is still absent (docs/saga.md). */
const CREATE_SETTLE_MS = 3_000;

/**
 * Creates the bucket when absent; an existing one of another shape is refused, never altered.
 * Several first connects race here: one creator can be answered "exists" (or succeed on the other's
 * half-made stream) while the other's add is still in flight or fails and is rolled back, so an
 * absent stream after a create is re-created until it is seen or CREATE_SETTLE_MS passes.
 */
export async function ensureBucket({ kvm, jsm }: BucketApi, spec: BucketSpec, settleMs = CREATE_SETTLE_MS): Promise<KV> {
  const stream = `KV_${spec.bucket}`;
  let cfg = await streamConfig(jsm, stream);
  const settleBy = performance.now() + settleMs;
  let lastRefusal: unknown;
  while (cfg === undefined) {
    try {
      await kvm.create(spec.bucket, { history: 1, storage: StorageType.File, allow_direct: false, ...(spec.ttlMs > 0 ? { ttl: spec.ttlMs } : {}), ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}) });
    } catch (err) {
      // A concurrent creator with another config wins the add; its shape is judged below.
      if (apiErrCode(err) === undefined) throw err;
      lastRefusal = err;
    }
    cfg = await streamConfig(jsm, stream);
    if (cfg !== undefined) break;
    if (performance.now() > settleBy) {
      const why = lastRefusal === undefined ? "" : ` (the server last answered: ${describe(lastRefusal)})`;
      throw unreachable(`create bucket ${spec.bucket}`, Object.assign(new Error(`stream ${stream} is still missing after create${why}`), { cause: lastRefusal }));
    }
    await sleep(50);
  }
  const problems = shapeProblems(cfg, spec);
  if (problems.length > 0) {
    throw new CotalError("inventory-corrupt", `bucket ${spec.bucket} exists with a shape cotal did not create: ${problems.join("; ")}`, {
      next: `cotal status   # then move stream ${stream} aside (cotal never alters it) and re-run; cotal recreates it with the right shape`,
      details: { bucket: spec.bucket, stream, problems },
    });
  }
  // Bound with allow_direct false: kv.get goes through $JS.API.STREAM.MSG.GET, served by the leader.
  return kvm.open(spec.bucket, { allow_direct: false });
}

export class AuthorityStore implements InventoryStore {
  readonly #nc: NatsConnection;
  readonly #inventory: KV;
  readonly #lease: KV;
  readonly #reconnectWaitMs: number;
  readonly #leaseTtlMs: number;
  readonly #guards: Guards;
  /** performance.now() of the connection's last disconnect / reconnect, from its status stream. */
  #lastDisconnectAt = -1;
  #lastReconnectAt = -1;

  private constructor(nc: NatsConnection, inventory: KV, lease: KV, opts: { reconnectWaitMs: number; leaseTtlMs: number; guards: Guards }) {
    this.#nc = nc;
    this.#inventory = inventory;
    this.#lease = lease;
    this.#reconnectWaitMs = opts.reconnectWaitMs;
    this.#leaseTtlMs = opts.leaseTtlMs;
    this.#guards = opts.guards;
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === "disconnect") this.#lastDisconnectAt = performance.now();
        else if (st.type === "reconnect") this.#lastReconnectAt = performance.now();
      }
    })().catch(() => undefined);
  }

  /**
   * After a proven reload, wait for this connection's own drop-and-reconnect (nats-server 2.9.10
   * drops every JWT client on reload) before writing: a CAS sent into the dying socket loses its
   * reply and costs a full request timeout. A server that keeps them (reloadKeepsJwtClients, 2.14.8+)
   * sends no drop to wait for, so its grace is 0 (BENCHMARKS.md: 150 ms twice per online backup); older ones cost `graceMs`.
   */
  async settleAfterReload(signalledAt: number, opts: { graceMs?: number; maxWaitMs?: number } = {}): Promise<void> {
    let keeps = false;
    try {
      keeps = serverFeatures(this.#nc.info?.version ?? "0.0.0").reloadKeepsJwtClients;
    } catch {
      // an unreadable version is treated as an old server: the grace stays
    }
    const graceUntil = performance.now() + (opts.graceMs ?? (keeps ? 0 : 150));
    const deadline = performance.now() + (opts.maxWaitMs ?? 3_000);
    for (;;) {
      if (this.#lastReconnectAt > signalledAt && this.#lastReconnectAt >= this.#lastDisconnectAt) return;
      const dropped = this.#lastDisconnectAt > signalledAt;
      if (!dropped && performance.now() > graceUntil) return;
      if (performance.now() > deadline) return; // the write path settles a lost reply by reading back
      await sleep(5);
    }
  }

  /**
   * Connects as a fresh in-memory user of the authority account (reconnecting: a reload on 2.9.10
   * drops every JWT client) and ensures both buckets exist with the right shape.
   */
  static async connect(url: string | readonly string[], authority: AccountRecord, opts: AuthorityStoreOptions = {}): Promise<AuthorityStore> {
    if (authority.kind !== "authority") {
      throw new CotalError("invalid-argument", `the inventory lives in the broker-authority account, not in ${authority.kind} account ${authority.name}`, {
        next: "cotal status   # auth/authority.json holds the authority account",
      });
    }
    const timeoutMs = opts.timeoutMs ?? 5_000;
    const leaseTtlMs = opts.leaseTtlMs ?? LEASE_TTL_MS;
    if (!Number.isInteger(leaseTtlMs) || leaseTtlMs < 100) throw new CotalError("invalid-argument", `lease TTL ${leaseTtlMs} ms is not an integer of at least 100 ms`, { next: BUG_EXIT });
    let nc: NatsConnection;
    try {
      nc = await connectAsAccount(url, authority, { name: opts.name ?? "cotal-authority", reconnect: true, timeoutMs, ttlSeconds: opts.userTtlSeconds });
    } catch (err) {
      throw unreachable(`reach the inventory at ${url}`, err);
    }
    try {
      const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
      const kvm = new Kvm(jetstream(nc, { timeout: timeoutMs }));
      const replicas = opts.replicas !== undefined ? { replicas: opts.replicas } : {};
      const inventory = await ensureBucket({ kvm, jsm }, { bucket: INVENTORY_BUCKET, ttlMs: 0, ...replicas });
      const lease = await ensureBucket({ kvm, jsm }, { bucket: LEASE_BUCKET, ttlMs: leaseTtlMs, ...replicas });
      return new AuthorityStore(nc, inventory, lease, { reconnectWaitMs: opts.reconnectWaitMs ?? 15_000, leaseTtlMs, guards: opts.guards ?? GUARDS_ON });
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw isCotalError(err) ? err : unreachable("open the inventory buckets", err);
    }
  }

  /** undefined when the key is absent (or deleted); "inventory-corrupt" when its bytes are unusable. */
  async read(): Promise<VersionedRecord | undefined> {
    const entry = await this.#readEntry(this.#inventory, INVENTORY_KEY, "read the inventory");
    if (entry === null || entry.operation !== "PUT") return undefined;
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(entry.value);
    } catch {
      text = Buffer.from(entry.value).toString("latin1");
      throw corrupt(entry.revision, "not UTF-8", text);
    }
    const parsed = parseInventoryRecord(text);
    if (typeof parsed === "string") throw corrupt(entry.revision, parsed, text);
    return { record: parsed, revision: entry.revision };
  }

  /** Create-only (the cold-boot seed); losing means another process seeded first. */
  async create(record: InventoryRecord): Promise<number> {
    const bytes = encodeRecord(record);
    this.#assertFits(record, bytes, "seed the inventory");
    try {
      return await this.#createOnly(this.#inventory, INVENTORY_KEY, bytes, "seed the inventory");
    } catch (err) {
      if (!isCotalError(err, "conflict")) throw err;
      throw refined(err, "the inventory record already exists: another process seeded this broker first", `${RERUN}   # acts on the record that won (cotal status shows it)`);
    }
  }

  /** CAS at `expectedRevision`; losing means another writer moved the record first. */
  async update(record: InventoryRecord, expectedRevision: number): Promise<number> {
    if (!Number.isInteger(expectedRevision) || expectedRevision < 1) {
      throw new CotalError("invalid-argument", `an inventory update needs the revision it read (got ${expectedRevision})`, { next: BUG_EXIT });
    }
    const bytes = encodeRecord(record);
    this.#assertFits(record, bytes, "update the inventory");
    try {
      return await this.#casWrite(this.#inventory, INVENTORY_KEY, bytes, expectedRevision, "update the inventory");
    } catch (err) {
      if (!isCotalError(err, "conflict")) throw err;
      throw refined(
        err,
        `the inventory moved past revision ${expectedRevision}: another writer changed it first`,
        `${RERUN}   # re-reads and re-decides (cotal status shows the concurrent mutation)`,
      );
    }
  }

  /** Create-only CAS in the TTL bucket. Held by someone else ⇒ "lease-held" naming the holder. */
  /**
   * `isDead` lets a caller take over a lease whose holder it can prove dead (a crashed process on this
   * host): the takeover is a CAS at the dead holder's revision, so two survivors cannot both win.
   */
  async acquireLease(key: string, holder: LeaseHolder, isDead?: (holder: LeaseHolder) => boolean): Promise<Lease> {
    assertLeaseKey(key);
    const value = newLeaseValue(holder);
    const bytes = encodeLeaseValue(value);
    let lastConflict: CotalError | undefined;
    // Re-trying with the SAME bytes is safe: create-only never overwrites, and the read-back knows our bytes.
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      try {
        const revision = await this.#createOnly(this.#lease, key, bytes, `acquire the writer lease ${key}`);
        return { key, leaseId: value.leaseId, revision, holder: { ...holder }, acquiredAt: Date.now() };
      } catch (err) {
        if (!isCotalError(err, "conflict")) throw err;
        lastConflict = err;
      }
      const cur = await this.#readEntry(this.#lease, key, `read the writer lease ${key}`);
      // Our own write that landed after its lost reply was settled: it is ours.
      if (cur !== null && cur.operation === "PUT" && sameBytes(cur.value, bytes)) {
        return { key, leaseId: value.leaseId, revision: cur.revision, holder: { ...holder }, acquiredAt: Date.now() };
      }
      if (cur !== null && cur.operation === "PUT") {
        const prior = parseLeaseValue(cur.value);
        if (prior && isDead?.(prior)) {
          try {
            const revision = await this.#casWrite(this.#lease, key, bytes, cur.revision, `take over the dead writer's lease ${key}`);
            return { key, leaseId: value.leaseId, revision, holder: { ...holder }, acquiredAt: Date.now() };
          } catch (err) {
            if (!isCotalError(err, "conflict")) throw err;
            continue; // another survivor took it first; re-read and judge again
          }
        }
        throw leaseHeldError(key, parseLeaseValue(cur.value), leaseRemainingMs(cur.created, this.#leaseTtlMs), lastConflict.cause);
      }
      // Lost to a writer that has already released (or a tombstone race): nobody holds it, try again.
    }
    throw leaseHeldError(key, "churn", this.#leaseTtlMs, lastConflict?.cause);
  }

  /** The fence: present, unexpired, and its value still carries our leaseId. */
  async checkLease(lease: Lease): Promise<boolean> {
    const cur = await this.#readEntry(this.#lease, lease.key, `re-check the writer lease ${lease.key}`);
    if (cur === null || cur.operation !== "PUT") return false;
    // max_age is enforced by a server timer; an expired value it has not dropped yet is not ours either.
    if (leaseRemainingMs(cur.created, this.#leaseTtlMs) <= 0) return false;
    return parseLeaseValue(cur.value)?.leaseId === lease.leaseId;
  }

  /** CAS update at lease.revision (resets the TTL); lost ⇒ "lease-lost". */
  async renewLease(lease: Lease): Promise<Lease> {
    const value: LeaseValue = {
      leaseId: lease.leaseId,
      pid: lease.holder.pid,
      host: lease.holder.host,
      verb: lease.holder.verb,
      acquiredAt: new Date(lease.acquiredAt).toISOString(),
      renewedAt: new Date().toISOString(),
    };
    const bytes = encodeLeaseValue(value);
    const what = `renew the writer lease ${lease.key}`;
    // A renewal racing one of the saga's own reloads can lose its reply without losing the lease.
    // Re-sending is decided by a read-back (still ours, unchanged) and pinned at the same revision.
    for (let attempt = 0; ; attempt++) {
      try {
        return { ...lease, revision: await this.#casWrite(this.#lease, lease.key, bytes, lease.revision, what) };
      } catch (err) {
        if (!isCotalError(err, "conflict")) throw err;
        const cur = await this.#readEntry(this.#lease, lease.key, what);
        const mine = cur !== null && cur.operation === "PUT" && parseLeaseValue(cur.value)?.leaseId === lease.leaseId;
        if (mine && cur.revision > lease.revision && sameBytes(cur.value, bytes)) return { ...lease, revision: cur.revision };
        const unchanged = mine && cur.revision === lease.revision && leaseRemainingMs(cur.created, this.#leaseTtlMs) > 0;
        if (attempt > 0 || err.details?.lostReply !== true || !unchanged) {
          throw leaseLostError(lease, unchanged ? `its renewal could not be confirmed (${err.message})` : "it expired or another writer took it", err.cause);
        }
      }
    }
  }

  /** Deletes the lease only while it is still ours (revision-guarded); already gone is not an error. */
  async releaseLease(lease: Lease): Promise<void> {
    const what = `release the writer lease ${lease.key}`;
    let lost: unknown;
    // The delete is pinned at our revision, so re-sending it after a read-back can never remove anyone else's lease.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.#lease.delete(lease.key, { previousSeq: lease.revision });
        return;
      } catch (err) {
        if (isCasLoss(err)) return; // expired, released, or someone else's now: nothing of ours to delete
        if (apiErrCode(err) !== undefined) throw unreachable(what, err);
        lost = err;
      }
      // Reply lost: the delete may have landed. Only our value still at our revision means it did not.
      const stillOurs = async (): Promise<boolean> => {
        const cur = await this.#readBack(this.#lease, lease.key, what, lost);
        return cur !== null && cur.operation === "PUT" && cur.revision === lease.revision;
      };
      if (!(await stillOurs())) return;
      await sleep(SETTLE_MS);
      if (!(await stillOurs())) return;
    }
    throw new CotalError("inventory-unreachable", `could not confirm the release of writer lease ${lease.key}: ${describe(lost)}`, {
      next: `nothing to do: the lease expires by itself within ${Math.ceil(this.#leaseTtlMs / 1000)}s`,
      details: { leaseKey: lease.key, revision: lease.revision },
      cause: lost,
    });
  }

  /** The server's max_payload as its INFO on this connection says (undefined before the first INFO). */
  maxPayload(): number | undefined {
    const m = this.#nc.info?.max_payload;
    return typeof m === "number" && m > 0 ? m : undefined;
  }

  /** Refuses, before sending, a record the server would refuse: a permanent error, never a retried conflict. */
  #assertFits(record: InventoryRecord, bytes: Uint8Array, what: string): void {
    if (this.#guards.IGNORE_RECORD_SIZE) return;
    const max = this.maxPayload();
    const needed = recordWriteBytes(record, bytes.length);
    if (max !== undefined && needed > max) throw tooLarge(needed, max, what);
  }

  /**
   * Calls `onChange` on every later write of the record key (a wake-up only: the caller re-reads
   * the record through `read()`, leader-served). Returns the stop function.
   */
  async watchRecord(onChange: () => void): Promise<() => void> {
    const iter = await this.#inventory.watch({ key: INVENTORY_KEY, include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const _ of iter) onChange();
    })().catch(() => undefined);
    return () => iter.stop();
  }

  async close(): Promise<void> {
    if (!this.#nc.isClosed()) await this.#nc.close().catch(() => undefined);
  }

  /**
   * Create-only, kv.create's rule (absent, or over a delete marker) but with each put settled on its
   * own: kv.create would issue its second put even after an ambiguous first one.
   */
  async #createOnly(kv: KV, key: string, bytes: Uint8Array, what: string): Promise<number> {
    try {
      return await this.#casWrite(kv, key, bytes, 0, what);
    } catch (err) {
      if (!isCotalError(err, "conflict") || err.details?.lostReply === true) throw err;
      const cur = await this.#readEntry(kv, key, what);
      if (cur === null || cur.operation === "PUT") throw err;
      return this.#casWrite(kv, key, bytes, cur.revision, what);
    }
  }

  /**
   * One CAS write pinned at `expected` (0 = the key must not exist). A definite CAS loss ⇒ "conflict"
   * with the API error as cause (isCasLoss holds). A lost reply ⇒ wait for the connection, read back, decide.
   */
  async #casWrite(kv: KV, key: string, bytes: Uint8Array, expected: number, what: string, resends = RESENDS): Promise<number> {
    try {
      // kv.update is this same put; kv.put accepts previousSeq 0, which kv.update refuses.
      return await kv.put(key, bytes, { previousSeq: expected });
    } catch (err) {
      if (isTooLarge(err, this.#guards)) throw tooLarge(bytes.length + PUT_OVERHEAD, this.maxPayload(), what, err);
      if (isCasLoss(err) && resends < RESENDS) {
        // A re-send lost its CAS: maybe because the first send landed after all. Only a read-back can say.
        const cur = await this.#readBack(kv, key, what, err);
        if (cur !== null && cur.operation === "PUT" && cur.revision > expected && sameBytes(cur.value, bytes)) return cur.revision;
      }
      if (isCasLoss(err)) {
        throw new CotalError("conflict", `${what}: lost the compare-and-swap at revision ${expected}`, {
          next: `${RERUN}   # re-reads and re-decides`,
          details: { expectedRevision: expected },
          cause: err,
        });
      }
      // Any other answer from the JetStream API is a definite refusal: nothing was stored.
      if (apiErrCode(err) !== undefined) throw unreachable(what, err);
      return this.#settleLostReply(kv, key, bytes, expected, what, err, resends);
    }
  }

  /** Our write landed iff the key now holds exactly our bytes at a revision past the one we CAS'd on. */
  async #settleLostReply(kv: KV, key: string, bytes: Uint8Array, expected: number, what: string, lost: unknown, resends: number): Promise<number> {
    const landed = (e: KvEntry | null): number | undefined =>
      e !== null && e.operation === "PUT" && e.revision > expected && sameBytes(e.value, bytes) ? e.revision : undefined;
    let cur = await this.#readBack(kv, key, what, lost);
    let ours = landed(cur);
    if (ours === undefined && (cur === null || cur.revision <= expected)) {
      // Nothing newer is visible yet: give a write still queued in the server one moment to land.
      await sleep(SETTLE_MS);
      cur = await this.#readBack(kv, key, what, lost);
      ours = landed(cur);
    }
    if (ours !== undefined) return ours;
    // Provably unchanged (our send was dropped while the client reconnected, as every reload makes it):
    // re-sending the identical CAS at the same revision is not blind, since at most one of them can land.
    const unchanged = cur === null ? expected === 0 : cur.revision === expected;
    if (unchanged && resends > 0) return this.#casWrite(kv, key, bytes, expected, what, resends - 1);
    const where = cur === null ? "the key is absent" : `the key is at revision ${cur.revision} without our write`;
    throw new CotalError("conflict", `${what}: the reply to the CAS at revision ${expected} was lost (${describe(lost)}) and ${where}`, {
      next: `${RERUN}   # re-reads and re-decides`,
      details: { expectedRevision: expected, storedRevision: cur?.revision ?? null, lostReply: true },
      cause: lost,
    });
  }

  /** A read-back after a lost reply; failing to read is "inventory-unreachable", never a guess. */
  async #readBack(kv: KV, key: string, what: string, lost: unknown): Promise<KvEntry | null> {
    try {
      return await this.#readEntry(kv, key, what);
    } catch (err) {
      if (!isCotalError(err, "inventory-unreachable")) throw err;
      throw new CotalError("inventory-unreachable", `${what}: the reply was lost (${describe(lost)}) and the key could not be read back, so whether the write landed is unknown`, {
        next: `cotal status && ${RERUN}   # status shows whether the write landed once the broker answers`,
        details: { key },
        cause: err,
      });
    }
  }

  /** kv.get with a bounded wait for the connection; transient failures are retried (reads are idempotent). */
  async #readEntry(kv: KV, key: string, what: string): Promise<KvEntry | null> {
    const deadline = Date.now() + this.#reconnectWaitMs;
    let last: unknown;
    for (;;) {
      if (this.#nc.isClosed()) throw unreachable(what, last ?? new Error("the connection to the broker is closed"));
      if (await this.#connected(deadline)) {
        try {
          return await kv.get(key);
        } catch (err) {
          // The server answered (stream gone, permissions…): retrying will not change its mind.
          if (apiErrCode(err) !== undefined) throw unreachable(what, err);
          last = err;
        }
      }
      // The connection is open but the broker did not answer in time (concurrent reloads drop every
      // client on 2.9.10): busy, retry; only a closed connection means the broker is gone.
      if (Date.now() >= deadline) throw busy(what, last ?? new Error(`no answer from the broker within ${this.#reconnectWaitMs} ms`));
      await sleep(50);
    }
  }

  /** True once a PING round-trips; false when the connection is down or the deadline passes first. */
  async #connected(deadline: number): Promise<boolean> {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.#nc.rtt().then(() => true),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(false), remaining);
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}

function encodeRecord(record: InventoryRecord): Uint8Array {
  const text = JSON.stringify(record);
  // Refuse to store what read() would call corrupt.
  const check = parseInventoryRecord(text);
  if (typeof check === "string") throw new CotalError("invalid-argument", `refusing to write an inventory record that does not parse: ${check}`, { next: BUG_EXIT });
  return new TextEncoder().encode(text);
}

/** Pure: the bytes a record write needs under max_payload, with a claim's room to grow. */
export function recordWriteBytes(record: InventoryRecord, encoded: number): number {
  const claim = record.pending !== null && record.pending !== undefined && record.pending.stagedDigest === undefined;
  return encoded + PUT_OVERHEAD + (claim ? CLAIM_GROWTH : 0);
}

function tooLarge(needed: number, maxPayload: number | undefined, what: string, cause?: unknown): CotalError {
  const limit = maxPayload === undefined ? "its max_payload" : `max_payload ${maxPayload} B`;
  return new CotalError("record-too-large", `cannot ${what}: the record needs ${needed} B in one message and the broker takes at most ${limit}; nothing was written`, {
    next: 'cotal down && cotal up --detach   # after raising "maxPayload" (bytes, at most 67108864) in settings.json; or add fewer spaces per batch',
    details: { bytes: needed, ...(maxPayload === undefined ? {} : { maxPayload }) },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A permanent size refusal: the client's own max_payload check, or the server's 10054. Never a conflict. */
function isTooLarge(err: unknown, guards: Guards): boolean {
  if (guards.IGNORE_RECORD_SIZE) return false;
  if (err instanceof InvalidArgumentError && err.message.includes("max_payload")) return true;
  return apiErrCode(err) === MESSAGE_TOO_LARGE;
}

/** The caller's wording for a definite CAS loss; a lost reply keeps its own (it is not a known loss). */
function refined(err: CotalError, message: string, next: string): CotalError {
  return new CotalError("conflict", err.details?.lostReply === true ? err.message : message, { next, details: err.details, cause: err.cause });
}

function corrupt(revision: number, reason: string, raw: string): CotalError {
  return new CotalError("inventory-corrupt", `the inventory record (revision ${revision}) is unusable: ${reason}`, {
    next: "cotal broker reconcile   # prints the disk and KV lists; --adopt-disk rewrites the record from the account records",
    details: { bucket: INVENTORY_BUCKET, key: INVENTORY_KEY, revision, reason, raw },
  });
}
