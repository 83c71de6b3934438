/**
 * The authority store (docs/saga.md, "The authority store"): the inventory record and the writer lease,
 * two KV buckets in the broker-authority account. This class is the record's reads and CAS writes and
 * the composition of the rest, each in its own home: the buckets' shape (bucket.ts), the CAS and read
 * discipline with lost-reply settling (kv-cas.ts), the lease (lease-store.ts), the payload guard
 * (record-size.ts), and waiting out a reload's drop (reload-settle.ts).
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, KvWatchInclude, type KV } from "@nats-io/kv";
import { connectAsAccount, connectWithCreds } from "../broker/connect.js";
import { isCotalError, RERUN, CotalError } from "../errors.js";
import type { AccountRecord } from "../root/records.js";
import { parseInventoryRecord, type InventoryRecord } from "./record.js";
import type { InventoryStore, VersionedRecord } from "./inventory-store.js";
import { LEASE_BUCKET, LEASE_TTL_MS, type Lease, type LeaseHolder } from "./lease.js";
import { ensureBucket, openExistingBucket } from "./bucket.js";
import { CasKv } from "./kv-cas.js";
import { apiErrCode, BUG_EXIT, isTransientApi, unreachable } from "./kv-errors.js";
import { MATERIAL_BUCKET, type MaterialKv } from "../broker/material-bucket.js";
import { PROOFS_BUCKET } from "./node-proofs.js";
import { LeaseStore } from "./lease-store.js";
import { recordWriteBytes, tooLarge } from "./record-size.js";
import { ConnectionWatch } from "./reload-settle.js";

export { LEASE_BUCKET, LEASE_TTL_MS, type Lease, type LeaseHolder } from "./lease.js";
export type { InventoryStore, VersionedRecord } from "./inventory-store.js";
export { isCasLoss } from "./kv-errors.js";

/** No space token in either bucket name, on purpose: whole-broker resources (docs/saga.md, "The authority store"). */
export const INVENTORY_BUCKET = "cotal_broker_inventory";
export const INVENTORY_KEY = "inventory";

/** A user of the authority account given as its creds (a node agent's own, root/agent-creds.ts): it signs nothing. */
export interface AgentUser {
  creds: string;
}

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

export class AuthorityStore implements InventoryStore {
  readonly #nc: NatsConnection;
  readonly #inventory: KV;
  readonly #cas: CasKv;
  readonly #leases: LeaseStore;
  readonly #watch: ConnectionWatch;
  readonly #guards: Guards;
  readonly #timeoutMs: number;
  readonly #reconnectWaitMs: number;
  /** The public buckets opened so far (the node material, the agents' proofs), by name. */
  readonly #buckets = new Map<string, KV>();

  private constructor(nc: NatsConnection, inventory: KV, lease: KV, opts: { reconnectWaitMs: number; leaseTtlMs: number; guards: Guards; timeoutMs: number }) {
    this.#nc = nc;
    this.#timeoutMs = opts.timeoutMs;
    this.#reconnectWaitMs = opts.reconnectWaitMs;
    this.#inventory = inventory;
    this.#guards = opts.guards;
    this.#cas = new CasKv(nc, { reconnectWaitMs: opts.reconnectWaitMs, guards: opts.guards, maxPayload: () => this.maxPayload() });
    this.#leases = new LeaseStore(this.#cas, lease, opts.leaseTtlMs);
    this.#watch = new ConnectionWatch(nc);
  }

  /** Waits out this connection's drop after a proven reload before the next write (reload-settle.ts). */
  settleAfterReload(signalledAt: number, opts: { graceMs?: number; maxWaitMs?: number } = {}): Promise<void> {
    return this.#watch.settleAfterReload(signalledAt, opts);
  }

  /**
   * Connects as a fresh in-memory user of the authority account (reconnecting: a reload on 2.9.10
   * drops every JWT client) and ensures both buckets exist with the right shape.
   */
  static async connect(url: string | readonly string[], authority: AccountRecord | AgentUser, opts: AuthorityStoreOptions = {}): Promise<AuthorityStore> {
    if (!("creds" in authority) && authority.kind !== "authority") {
      throw new CotalError("invalid-argument", `the inventory lives in the broker-authority account, not in ${authority.kind} account ${authority.name}`, {
        next: "cotal status   # auth/authority.json holds the authority account",
      });
    }
    const timeoutMs = opts.timeoutMs ?? 5_000;
    const leaseTtlMs = opts.leaseTtlMs ?? LEASE_TTL_MS;
    if (!Number.isInteger(leaseTtlMs) || leaseTtlMs < 100) throw new CotalError("invalid-argument", `lease TTL ${leaseTtlMs} ms is not an integer of at least 100 ms`, { next: BUG_EXIT });
    let nc: NatsConnection;
    try {
      const how = { name: opts.name ?? "cotal-authority", reconnect: true, timeoutMs };
      nc = "creds" in authority ? await connectWithCreds(url, authority.creds, how) : await connectAsAccount(url, authority, { ...how, ttlSeconds: opts.userTtlSeconds });
    } catch (err) {
      throw unreachable(`reach the inventory at ${url}`, err);
    }
    try {
      const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
      const kvm = new Kvm(jetstream(nc, { timeout: timeoutMs }));
      const replicas = opts.replicas !== undefined ? { replicas: opts.replicas } : {};
      const inventory = await ensureBucket({ kvm, jsm }, { bucket: INVENTORY_BUCKET, ttlMs: 0, ...replicas });
      const lease = await ensureBucket({ kvm, jsm }, { bucket: LEASE_BUCKET, ttlMs: leaseTtlMs, ...replicas });
      return new AuthorityStore(nc, inventory, lease, { reconnectWaitMs: opts.reconnectWaitMs ?? 15_000, leaseTtlMs, guards: opts.guards ?? GUARDS_ON, timeoutMs });
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw isCotalError(err) ? err : unreachable("open the inventory buckets", err);
    }
  }

  /** undefined when the key is absent (or deleted); "inventory-corrupt" when its bytes are unusable. */
  async read(): Promise<VersionedRecord | undefined> {
    const entry = await this.#cas.readEntry(this.#inventory, INVENTORY_KEY, "read the inventory");
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
      return await this.#cas.createOnly(this.#inventory, INVENTORY_KEY, bytes, "seed the inventory");
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
      return await this.#cas.casWrite(this.#inventory, INVENTORY_KEY, bytes, expectedRevision, "update the inventory");
    } catch (err) {
      if (!isCotalError(err, "conflict")) throw err;
      throw refined(
        err,
        `the inventory moved past revision ${expectedRevision}: another writer changed it first`,
        `${RERUN}   # re-reads and re-decides (cotal status shows the concurrent mutation)`,
      );
    }
  }

  acquireLease(key: string, holder: LeaseHolder, isDead?: (holder: LeaseHolder) => boolean): Promise<Lease> {
    return this.#leases.acquire(key, holder, isDead);
  }

  checkLease(lease: Pick<Lease, "key" | "leaseId">): Promise<boolean> {
    return this.#leases.check(lease);
  }

  renewLease(lease: Lease): Promise<Lease> {
    return this.#leases.renew(lease);
  }

  releaseLease(lease: Lease): Promise<void> {
    return this.#leases.release(lease);
  }

  /**
   * The public bucket of the node material (broker/material-bucket.ts). A writer (`create`, a cluster
   * root's reload) creates it on first use with `replicas`; a reader (an agent) never creates it, and
   * reads nothing while it is absent. A single broker never opens it.
   */
  materialKv(replicas?: number, opts: { create?: boolean } = {}): MaterialKv {
    return this.#publicKv(MATERIAL_BUCKET, "the node material", replicas, opts.create !== false);
  }

  /**
   * The bucket of the agents' proofs (inventory/node-proofs.ts): a key per node, which only that node's
   * agent may write. `cotal up` on a cluster root creates it; an agent never does.
   */
  proofsKv(replicas?: number, opts: { create?: boolean } = {}): MaterialKv {
    return this.#publicKv(PROOFS_BUCKET, "the nodes' proofs", replicas, opts.create !== false);
  }

  #publicKv(bucket: string, what: string, replicas: number | undefined, create: boolean): MaterialKv {
    const spec = { bucket, ttlMs: 0, ...(replicas !== undefined ? { replicas } : {}) };
    const open = async (): Promise<KV | undefined> => {
      const cached = this.#buckets.get(bucket);
      if (cached) return cached;
      let kv: KV | undefined;
      // The JetStream API may time out while a node's loss elects new leaders: retried within the reconnect wait.
      await this.#retried(`open bucket ${bucket}`, async () => {
        const jsm = await jetstreamManager(this.#nc, { timeout: this.#timeoutMs });
        const kvm = new Kvm(jetstream(this.#nc, { timeout: this.#timeoutMs }));
        kv = create ? await ensureBucket({ kvm, jsm }, spec) : await openExistingBucket({ kvm, jsm }, spec);
      });
      // Only a bucket that exists is kept: an absent one may be created by the next cluster writer.
      if (kv) this.#buckets.set(bucket, kv);
      return kv;
    };
    const write = `write ${what}`;
    const written = async (): Promise<KV> => {
      const kv = await open();
      if (!kv) throw unreachable(write, new Error(`bucket ${bucket} is absent`));
      return kv;
    };
    return {
      get: async (key) => {
        const kv = await open();
        if (!kv) return undefined;
        const entry = await this.#cas.readEntry(kv, key, `read ${what}`);
        return entry === null || entry.operation !== "PUT" ? undefined : entry.value;
      },
      put: async (key, value) => {
        const kv = await written();
        await this.#retried(write, () => kv.put(key, value));
      },
      delete: async (key) => {
        const kv = await written();
        await this.#retried(write, () => kv.delete(key));
      },
    };
  }

  /** An idempotent call retried while the broker does not answer (a reload's drop) or JetStream says "not yet", never past the reconnect wait. */
  async #retried(what: string, write: () => Promise<unknown>): Promise<void> {
    const deadline = Date.now() + this.#reconnectWaitMs;
    for (;;) {
      try {
        await write();
        return;
      } catch (err) {
        if (isCotalError(err)) throw err;
        if ((apiErrCode(err) !== undefined && !isTransientApi(err)) || this.#nc.isClosed() || Date.now() >= deadline) throw unreachable(what, err);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
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
}

function encodeRecord(record: InventoryRecord): Uint8Array {
  const text = JSON.stringify(record);
  // Refuse to store what read() would call corrupt.
  const check = parseInventoryRecord(text);
  if (typeof check === "string") throw new CotalError("invalid-argument", `refusing to write an inventory record that does not parse: ${check}`, { next: BUG_EXIT });
  return new TextEncoder().encode(text);
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
