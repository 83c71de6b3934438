/**
 * An in-memory InventoryStore with the real store's contract (inventory/authority-store.ts): every
 * write is a revision-pinned CAS, a loss is a typed `conflict`, the seed is create-only, and the
 * writer lease is create-only in a TTL bucket judged by an injectable clock. Faults are injected at
 * a chosen call of a chosen operation, so a test can put a lost reply, a CAS loss or a concurrent
 * writer exactly where it wants one.
 */
import { RERUN, CotalError } from "../errors.js";
import type { InventoryStore, VersionedRecord } from "../inventory/inventory-store.js";
import { LEASE_TTL_MS, assertLeaseKey, leaseHeldError, leaseLostError, leaseRemainingMs, newLeaseValue, type Lease, type LeaseHolder, type LeaseValue } from "../inventory/lease.js";
import { parseInventoryRecord, type InventoryRecord } from "../inventory/record.js";
import type { MaterialKv } from "../broker/material-bucket.js";

export type StoreOp = keyof InventoryStore;

/**
 * - `cas-loss`: the server refuses the CAS (as if another writer had moved the key): `conflict`, nothing written.
 * - `lost-reply`: the write lands, its reply is lost, and the read-back settles it: the caller sees success.
 * - `lost-reply-unread`: the reply is lost and the key cannot be read back: `inventory-unreachable`;
 *   `landed` says whether the write is in the store anyway (a crash-like, ambiguous outcome).
 * - `concurrent-write`: another writer CASes `mutate(current)` just before this call runs.
 */
export type StoreFault =
  | { kind: "cas-loss" }
  | { kind: "lost-reply" }
  | { kind: "lost-reply-unread"; landed: boolean }
  | { kind: "concurrent-write"; mutate?: (record: InventoryRecord) => InventoryRecord };

/** A clock the test moves by hand; the lease TTL is judged by it, never by the wall clock. */
export class ManualClock {
  #now: number;
  constructor(start = Date.now()) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}

interface LeaseEntry {
  value: LeaseValue;
  revision: number;
  writtenAt: number;
}

interface Hook {
  op: StoreOp;
  when: (call: number) => boolean;
  action: StoreFault | (() => void | Promise<void>);
}

export interface MemoryStoreOptions {
  clock?: { now(): number };
  leaseTtlMs?: number;
}

export class MemoryInventoryStore implements InventoryStore {
  readonly clock: { now(): number };
  readonly leaseTtlMs: number;
  /** The stored record as bytes, so nothing the caller holds aliases it. */
  #inventory: { text: string; revision: number } | undefined;
  /** One sequence per bucket, as a KV stream numbers its messages. */
  #inventorySeq = 0;
  #leaseSeq = 0;
  readonly #leases = new Map<string, LeaseEntry>();
  readonly #hooks: Hook[] = [];
  readonly #calls = new Map<StoreOp, number>();
  /** Every write that landed, in order: which op and the revision it produced. */
  readonly writes: { op: "create" | "update" | "concurrent"; revision: number; record: InventoryRecord }[] = [];

  constructor(opts: MemoryStoreOptions = {}) {
    this.clock = opts.clock ?? { now: () => Date.now() };
    this.leaseTtlMs = opts.leaseTtlMs ?? LEASE_TTL_MS;
  }

  /** Runs `action` before call number `nth` (1-based, or a predicate over it) of `op`. */
  on(op: StoreOp, nth: number | ((call: number) => boolean), action: Hook["action"]): this {
    this.#hooks.push({ op, when: typeof nth === "number" ? (c) => c === nth : nth, action });
    return this;
  }

  /** How many times `op` was called so far. */
  calls(op: StoreOp): number {
    return this.#calls.get(op) ?? 0;
  }

  /** The durable state, read without counting as a call or firing a hook. */
  peek(): VersionedRecord | undefined {
    return this.#inventory && { record: JSON.parse(this.#inventory.text) as InventoryRecord, revision: this.#inventory.revision };
  }

  /** A record written directly, as a store restored from a copy (or a test's starting state) holds it. */
  put(record: InventoryRecord): number {
    return this.#store(record, "concurrent");
  }

  /** The lease entry for `key` the TTL still keeps, if any. */
  peekLease(key: string): LeaseValue | undefined {
    return this.#liveLease(key)?.value;
  }

  async read(): Promise<VersionedRecord | undefined> {
    await this.#enter("read");
    if (!this.#inventory) return undefined;
    // As the authority store reads it: through the one parse.
    const parsed = parseInventoryRecord(this.#inventory.text);
    if (typeof parsed === "string") throw new CotalError("inventory-corrupt", `the inventory record (revision ${this.#inventory.revision}) is unusable: ${parsed}`, { next: "cotal broker reconcile" });
    return { record: parsed, revision: this.#inventory.revision };
  }

  async create(record: InventoryRecord): Promise<number> {
    const fault = await this.#enter("create");
    return this.#write("create", record, fault, () => {
      if (this.#inventory) {
        throw new CotalError("conflict", "the inventory record already exists: another process seeded this broker first", {
          next: `${RERUN}   # acts on the record that won (cotal status shows it)`,
          details: { expectedRevision: 0 },
        });
      }
    });
  }

  async update(record: InventoryRecord, expectedRevision: number): Promise<number> {
    const fault = await this.#enter("update");
    if (!Number.isInteger(expectedRevision) || expectedRevision < 1) {
      throw new CotalError("invalid-argument", `an inventory update needs the revision it read (got ${expectedRevision})`);
    }
    return this.#write("update", record, fault, () => {
      if (this.#inventory?.revision !== expectedRevision) {
        throw new CotalError("conflict", `the inventory moved past revision ${expectedRevision}: another writer changed it first`, {
          next: `${RERUN}   # re-reads and re-decides (cotal status shows the concurrent mutation)`,
          details: { expectedRevision },
        });
      }
    });
  }

  async acquireLease(key: string, holder: LeaseHolder, isDead?: (holder: LeaseHolder) => boolean): Promise<Lease> {
    await this.#enter("acquireLease");
    assertLeaseKey(key);
    const value = newLeaseValue(holder, new Date(this.clock.now()));
    const cur = this.#liveLease(key);
    if (cur && !isDead?.(cur.value)) throw leaseHeldError(key, cur.value, leaseRemainingMs(new Date(cur.writtenAt), this.leaseTtlMs, this.clock.now()));
    const revision = this.#putLease(key, value);
    return { key, leaseId: value.leaseId, revision, holder: { ...holder }, acquiredAt: this.clock.now() };
  }

  async checkLease(lease: Pick<Lease, "key" | "leaseId">): Promise<boolean> {
    await this.#enter("checkLease");
    return this.#liveLease(lease.key)?.value.leaseId === lease.leaseId;
  }

  async renewLease(lease: Lease): Promise<Lease> {
    await this.#enter("renewLease");
    const cur = this.#liveLease(lease.key);
    if (!cur || cur.revision !== lease.revision) throw leaseLostError(lease, "it expired or another writer took it");
    return { ...lease, revision: this.#putLease(lease.key, { ...cur.value, renewedAt: new Date(this.clock.now()).toISOString() }) };
  }

  async releaseLease(lease: Lease): Promise<void> {
    await this.#enter("releaseLease");
    const cur = this.#liveLease(lease.key);
    if (cur && cur.revision === lease.revision) this.#leases.delete(lease.key);
  }

  async settleAfterReload(_signalledAt: number): Promise<void> {
    await this.#enter("settleAfterReload");
  }

  /** The node material's public bucket (broker/material-bucket.ts) as the real store opens it, in a Map. */
  readonly material = new Map<string, Uint8Array>();

  materialKv(): MaterialKv {
    return mapKv(this.material);
  }

  /** The agents' proofs (inventory/node-proofs.ts), a key per node, in a Map. */
  readonly proofs = new Map<string, Uint8Array>();

  proofsKv(): MaterialKv {
    return mapKv(this.proofs);
  }

  #liveLease(key: string): LeaseEntry | undefined {
    const cur = this.#leases.get(key);
    // The server's max_age drops an expired value; one it has not dropped yet is nobody's either.
    if (cur && leaseRemainingMs(new Date(cur.writtenAt), this.leaseTtlMs, this.clock.now()) <= 0) {
      this.#leases.delete(key);
      return undefined;
    }
    return cur;
  }

  #putLease(key: string, value: LeaseValue): number {
    const revision = ++this.#leaseSeq;
    this.#leases.set(key, { value, revision, writtenAt: this.clock.now() });
    return revision;
  }

  /** Counts the call and runs its hooks; returns the write fault, if one is armed for this call. */
  async #enter(op: StoreOp): Promise<StoreFault | undefined> {
    const call = this.calls(op) + 1;
    this.#calls.set(op, call);
    let fault: StoreFault | undefined;
    for (const h of this.#hooks.filter((x) => x.op === op && x.when(call))) {
      if (typeof h.action === "function") await h.action();
      else if (h.action.kind === "concurrent-write") this.#concurrentWrite(h.action.mutate);
      else fault = h.action;
    }
    return fault;
  }

  #concurrentWrite(mutate: (r: InventoryRecord) => InventoryRecord = (r) => r): void {
    const cur = this.peek();
    if (!cur) throw new Error("MemoryInventoryStore: a concurrent write needs a record to move");
    this.#store(mutate(cur.record), "concurrent");
  }

  #write(op: "create" | "update", record: InventoryRecord, fault: StoreFault | undefined, cas: () => void): number {
    const check = parseInventoryRecord(JSON.stringify(record));
    if (typeof check === "string") throw new CotalError("invalid-argument", `refusing to write an inventory record that does not parse: ${check}`);
    if (fault?.kind === "cas-loss") {
      throw new CotalError("conflict", `${op} the inventory: lost the compare-and-swap (injected)`, { next: `${RERUN}   # re-reads and re-decides` });
    }
    cas();
    if (fault?.kind === "lost-reply-unread") {
      if (fault.landed) this.#store(record, op);
      throw new CotalError("inventory-unreachable", `${op} the inventory: the reply was lost and the key could not be read back, so whether the write landed is unknown`, {
        next: `cotal status && ${RERUN}   # status shows whether the write landed once the broker answers`,
      });
    }
    // `lost-reply` lands and is settled by the read-back: from the caller's side, an ordinary success.
    return this.#store(record, op);
  }

  #store(record: InventoryRecord, op: "create" | "update" | "concurrent"): number {
    const revision = ++this.#inventorySeq;
    this.#inventory = { text: JSON.stringify(record), revision };
    this.writes.push({ op, revision, record: JSON.parse(this.#inventory.text) as InventoryRecord });
    return revision;
  }
}

/** A public bucket as the real store opens it, in a Map. */
function mapKv(m: Map<string, Uint8Array>): MaterialKv {
  return {
    get: (key) => Promise.resolve(m.get(key)),
    put: (key, value) => (m.set(key, value), Promise.resolve()),
    delete: (key) => (m.delete(key), Promise.resolve()),
  };
}
