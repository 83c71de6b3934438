/**
 * The writer lease's I/O (docs/saga.md, "The writer lease"): create-only acquire, a fence that re-reads
 * it, revision-pinned renew and release, all through the store's CAS discipline (kv-cas.ts). The pure
 * half (value codec, TTL arithmetic, refusals) is lease.ts.
 */
import type { KV } from "@nats-io/kv";
import { CotalError, isCotalError } from "../errors.js";
import type { CasKv } from "./kv-cas.js";
import { SETTLE_MS } from "./kv-cas.js";
import { apiErrCode, describe, isCasLoss, sameBytes, sleep, unreachable } from "./kv-errors.js";
import { assertLeaseKey, encodeLeaseValue, leaseHeldError, leaseLostError, leaseRemainingMs, newLeaseValue, parseLeaseValue, type Lease, type LeaseHolder, type LeaseValue } from "./lease.js";

const ACQUIRE_ATTEMPTS = 3;

export class LeaseStore {
  readonly #cas: CasKv;
  readonly #kv: KV;
  readonly #ttlMs: number;

  constructor(cas: CasKv, kv: KV, ttlMs: number) {
    this.#cas = cas;
    this.#kv = kv;
    this.#ttlMs = ttlMs;
  }

  /**
   * Create-only CAS in the TTL bucket. Held by someone else ⇒ "lease-held" naming the holder. `isDead`
   * lets a caller take over a lease whose holder it can prove dead (a crashed process on this host):
   * the takeover is a CAS at the dead holder's revision, so two survivors cannot both win.
   */
  async acquire(key: string, holder: LeaseHolder, isDead?: (holder: LeaseHolder) => boolean): Promise<Lease> {
    assertLeaseKey(key);
    const value = newLeaseValue(holder);
    const bytes = encodeLeaseValue(value);
    const ours = (revision: number): Lease => ({ key, leaseId: value.leaseId, revision, holder: { ...holder }, acquiredAt: Date.now() });
    let lastConflict: CotalError | undefined;
    // Re-trying with the SAME bytes is safe: create-only never overwrites, and the read-back knows our bytes.
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      try {
        return ours(await this.#cas.createOnly(this.#kv, key, bytes, `acquire the writer lease ${key}`));
      } catch (err) {
        if (!isCotalError(err, "conflict")) throw err;
        lastConflict = err;
      }
      const cur = await this.#cas.readEntry(this.#kv, key, `read the writer lease ${key}`);
      // Our own write that landed after its lost reply was settled: it is ours.
      if (cur !== null && cur.operation === "PUT" && sameBytes(cur.value, bytes)) return ours(cur.revision);
      if (cur !== null && cur.operation === "PUT") {
        const prior = parseLeaseValue(cur.value);
        if (prior && isDead?.(prior)) {
          try {
            return ours(await this.#cas.casWrite(this.#kv, key, bytes, cur.revision, `take over the dead writer's lease ${key}`));
          } catch (err) {
            if (!isCotalError(err, "conflict")) throw err;
            continue; // another survivor took it first; re-read and judge again
          }
        }
        throw leaseHeldError(key, parseLeaseValue(cur.value), leaseRemainingMs(cur.created, this.#ttlMs), lastConflict.cause);
      }
      // Lost to a writer that has already released (or a tombstone race): nobody holds it, try again.
    }
    throw leaseHeldError(key, "churn", this.#ttlMs, lastConflict?.cause);
  }

  /** The fence: present, unexpired, and its value still carries our leaseId. */
  async check(lease: Pick<Lease, "key" | "leaseId">): Promise<boolean> {
    const cur = await this.#cas.readEntry(this.#kv, lease.key, `re-check the writer lease ${lease.key}`);
    if (cur === null || cur.operation !== "PUT") return false;
    // max_age is enforced by a server timer; an expired value it has not dropped yet is not ours either.
    if (leaseRemainingMs(cur.created, this.#ttlMs) <= 0) return false;
    return parseLeaseValue(cur.value)?.leaseId === lease.leaseId;
  }

  /** CAS update at lease.revision (resets the TTL); lost ⇒ "lease-lost". */
  async renew(lease: Lease): Promise<Lease> {
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
        return { ...lease, revision: await this.#cas.casWrite(this.#kv, lease.key, bytes, lease.revision, what) };
      } catch (err) {
        if (!isCotalError(err, "conflict")) throw err;
        const cur = await this.#cas.readEntry(this.#kv, lease.key, what);
        const mine = cur !== null && cur.operation === "PUT" && parseLeaseValue(cur.value)?.leaseId === lease.leaseId;
        if (mine && cur.revision > lease.revision && sameBytes(cur.value, bytes)) return { ...lease, revision: cur.revision };
        const unchanged = mine && cur.revision === lease.revision && leaseRemainingMs(cur.created, this.#ttlMs) > 0;
        if (attempt > 0 || err.details?.lostReply !== true || !unchanged) {
          throw leaseLostError(lease, unchanged ? `its renewal could not be confirmed (${err.message})` : "it expired or another writer took it", err.cause);
        }
      }
    }
  }

  /** Deletes the lease only while it is still ours (revision-guarded); already gone is not an error. */
  async release(lease: Lease): Promise<void> {
    const what = `release the writer lease ${lease.key}`;
    let lost: unknown;
    // The delete is pinned at our revision, so re-sending it after a read-back can never remove anyone else's lease.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.#kv.delete(lease.key, { previousSeq: lease.revision });
        return;
      } catch (err) {
        if (isCasLoss(err)) return; // expired, released, or someone else's now: nothing of ours to delete
        if (apiErrCode(err) !== undefined) throw unreachable(what, err);
        lost = err;
      }
      // Reply lost: the delete may have landed. Only our value still at our revision means it did not.
      const stillOurs = async (): Promise<boolean> => {
        const cur = await this.#cas.readBack(this.#kv, lease.key, what, lost);
        return cur !== null && cur.operation === "PUT" && cur.revision === lease.revision;
      };
      if (!(await stillOurs())) return;
      await sleep(SETTLE_MS);
      if (!(await stillOurs())) return;
    }
    throw new CotalError("inventory-unreachable", `could not confirm the release of writer lease ${lease.key}: ${describe(lost)}`, {
      next: `nothing to do: the lease expires by itself within ${Math.ceil(this.#ttlMs / 1000)}s`,
      details: { leaseKey: lease.key, revision: lease.revision },
      cause: lost,
    });
  }
}
