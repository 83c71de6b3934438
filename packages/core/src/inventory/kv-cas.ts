/**
 * Revision-pinned writes and bounded reads of one KV key (docs/saga.md, "The authority store"): a
 * definite CAS loss is a `conflict`; a lost reply is settled by reading the key back, never by a blind
 * retry and never by assuming it failed.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { KV, KvEntry } from "@nats-io/kv";
import type { Guards } from "../guards.js";
import { CotalError, isCotalError, RERUN } from "../errors.js";
import { apiErrCode, busy, describe, isCasLoss, isTransientApi, sameBytes, sleep, unreachable } from "./kv-errors.js";
import { isTooLarge, PUT_OVERHEAD, tooLarge } from "./record-size.js";

/** A write still queued inside the server when we first read back gets this long to land. */
export const SETTLE_MS = 250;
/** Re-sends of a CAS whose reply was lost while the key provably stayed at the expected revision. */
const RESENDS = 3;

export interface CasKvOptions {
  /** How long a write or read waits for the connection to come back (every reload drops it). */
  reconnectWaitMs: number;
  /** The verb's guards (docs/ablation.md): IGNORE_RECORD_SIZE. */
  guards: Guards;
  /** The server's max_payload, for the size refusal's message. */
  maxPayload: () => number | undefined;
}

/** The CAS and read discipline every key of the authority store is written and read with. */
export class CasKv {
  readonly #nc: NatsConnection;
  readonly #opts: CasKvOptions;

  constructor(nc: NatsConnection, opts: CasKvOptions) {
    this.#nc = nc;
    this.#opts = opts;
  }

  /**
   * Create-only, kv.create's rule (absent, or over a delete marker) but with each put settled on its
   * own: kv.create would issue its second put even after an ambiguous first one.
   */
  async createOnly(kv: KV, key: string, bytes: Uint8Array, what: string): Promise<number> {
    try {
      return await this.casWrite(kv, key, bytes, 0, what);
    } catch (err) {
      if (!isCotalError(err, "conflict") || err.details?.lostReply === true) throw err;
      const cur = await this.readEntry(kv, key, what);
      if (cur === null || cur.operation === "PUT") throw err;
      return this.casWrite(kv, key, bytes, cur.revision, what);
    }
  }

  /**
   * One CAS write pinned at `expected` (0 = the key must not exist). A definite CAS loss ⇒ "conflict"
   * with the API error as cause (isCasLoss holds). A lost reply ⇒ wait for the connection, read back, decide.
   */
  async casWrite(kv: KV, key: string, bytes: Uint8Array, expected: number, what: string, resends = RESENDS): Promise<number> {
    try {
      // kv.update is this same put; kv.put accepts previousSeq 0, which kv.update refuses.
      return await kv.put(key, bytes, { previousSeq: expected });
    } catch (err) {
      if (isTooLarge(err, this.#opts.guards)) throw tooLarge(bytes.length + PUT_OVERHEAD, this.#opts.maxPayload(), what, err);
      if (isCasLoss(err) && resends < RESENDS) {
        // A re-send lost its CAS: maybe because the first send landed after all. Only a read-back can say.
        const cur = await this.readBack(kv, key, what, err);
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
    let cur = await this.readBack(kv, key, what, lost);
    let ours = landed(cur);
    if (ours === undefined && (cur === null || cur.revision <= expected)) {
      // Nothing newer is visible yet: give a write still queued in the server one moment to land.
      await sleep(SETTLE_MS);
      cur = await this.readBack(kv, key, what, lost);
      ours = landed(cur);
    }
    if (ours !== undefined) return ours;
    // Provably unchanged (our send was dropped while the client reconnected, as every reload makes it):
    // re-sending the identical CAS at the same revision is not blind, since at most one of them can land.
    const unchanged = cur === null ? expected === 0 : cur.revision === expected;
    if (unchanged && resends > 0) return this.casWrite(kv, key, bytes, expected, what, resends - 1);
    const where = cur === null ? "the key is absent" : `the key is at revision ${cur.revision} without our write`;
    throw new CotalError("conflict", `${what}: the reply to the CAS at revision ${expected} was lost (${describe(lost)}) and ${where}`, {
      next: `${RERUN}   # re-reads and re-decides`,
      details: { expectedRevision: expected, storedRevision: cur?.revision ?? null, lostReply: true },
      cause: lost,
    });
  }

  /** A read-back after a lost reply; failing to read is "inventory-unreachable", never a guess. */
  async readBack(kv: KV, key: string, what: string, lost: unknown): Promise<KvEntry | null> {
    try {
      return await this.readEntry(kv, key, what);
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
  async readEntry(kv: KV, key: string, what: string): Promise<KvEntry | null> {
    const deadline = Date.now() + this.#opts.reconnectWaitMs;
    let last: unknown;
    for (;;) {
      if (this.#nc.isClosed()) throw unreachable(what, last ?? new Error("the connection to the broker is closed"));
      if (await this.#connected(deadline)) {
        try {
          return await kv.get(key);
        } catch (err) {
          // The server answered (stream gone, permissions…): retrying will not change its mind, unless it said "not yet".
          if (apiErrCode(err) !== undefined && !isTransientApi(err)) throw unreachable(what, err);
          last = err;
        }
      }
      // The connection is open but the broker did not answer in time (concurrent reloads drop every
      // client on 2.9.10): busy, retry; only a closed connection means the broker is gone.
      if (Date.now() >= deadline) throw busy(what, last ?? new Error(`no answer from the broker within ${this.#opts.reconnectWaitMs} ms`));
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
