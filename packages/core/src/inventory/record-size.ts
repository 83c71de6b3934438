/**
 * The payload guard (docs/saga.md, "The claim"): a record write must fit the server's max_payload with
 * room for what a claim still grows by, refused before the first write rather than half-way.
 */
import { InvalidArgumentError } from "@nats-io/transport-node";
import type { Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { apiErrCode } from "./kv-errors.js";
import type { InventoryRecord } from "./record.js";

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

/** Pure: the bytes a record write needs under max_payload, with a claim's room to grow. */
export function recordWriteBytes(record: InventoryRecord, encoded: number): number {
  const claim = record.pending !== null && record.pending !== undefined && record.pending.stagedDigest === undefined;
  return encoded + PUT_OVERHEAD + (claim ? CLAIM_GROWTH : 0);
}

export function tooLarge(needed: number, maxPayload: number | undefined, what: string, cause?: unknown): CotalError {
  const limit = maxPayload === undefined ? "its max_payload" : `max_payload ${maxPayload} B`;
  return new CotalError("record-too-large", `cannot ${what}: the record needs ${needed} B in one message and the broker takes at most ${limit}; nothing was written`, {
    next: 'cotal down && cotal up --detach   # after raising "maxPayload" (bytes, at most 67108864) in settings.json; or add fewer spaces per batch',
    details: { bytes: needed, ...(maxPayload === undefined ? {} : { maxPayload }) },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A permanent size refusal: the client's own max_payload check, or the server's 10054. Never a conflict. */
export function isTooLarge(err: unknown, guards: Guards): boolean {
  if (guards.IGNORE_RECORD_SIZE) return false;
  if (err instanceof InvalidArgumentError && err.message.includes("max_payload")) return true;
  return apiErrCode(err) === MESSAGE_TOO_LARGE;
}
