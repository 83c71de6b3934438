/**
 * Account limits as nats-io/jwt v2 serialises `OperatorLimits` (NatsLimits + AccountLimits +
 * JetStreamLimits, flattened into `nats.limits`). -1 means unlimited; JetStream is on when
 * mem_storage or disk_storage is non-zero.
 */
import { SagaError } from "../errors.js";

export interface AccountLimits {
  // NatsLimits
  subs: number;
  data: number;
  payload: number;
  // AccountLimits
  imports: number;
  exports: number;
  wildcards: boolean;
  conn: number;
  leaf: number;
  // JetStreamLimits
  mem_storage: number;
  disk_storage: number;
  streams: number;
  consumer: number;
  max_ack_pending: number;
  mem_max_stream_bytes: number;
  disk_max_stream_bytes: number;
  max_bytes_required: boolean;
}

/** Everything unlimited, JetStream on: the default for space and authority accounts. */
export const UNLIMITED_JETSTREAM: Readonly<AccountLimits> = Object.freeze({
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
  mem_storage: -1,
  disk_storage: -1,
  streams: -1,
  consumer: -1,
  max_ack_pending: -1,
  mem_max_stream_bytes: -1,
  disk_max_stream_bytes: -1,
  max_bytes_required: false,
});

/** Core NATS unlimited, JetStream off (storage 0): the system account. */
export const NO_JETSTREAM: Readonly<AccountLimits> = Object.freeze({
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
  mem_storage: 0,
  disk_storage: 0,
  streams: 0,
  consumer: 0,
  max_ack_pending: 0,
  mem_max_stream_bytes: 0,
  disk_max_stream_bytes: 0,
  max_bytes_required: false,
});

const BOOLEAN_LIMITS: ReadonlySet<string> = new Set(["wildcards", "max_bytes_required"]);

/**
 * `base` overlaid with the defined fields of `overrides`, every field checked. The result always
 * carries every field: nats-server treats a missing conn/subs as 0 and refuses every connection.
 */
export function mergeLimits(base: Readonly<AccountLimits>, overrides: Partial<AccountLimits> = {}): AccountLimits {
  const merged: AccountLimits = { ...base };
  for (const [field, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!Object.hasOwn(base, field)) throw new SagaError("invalid-argument", `unknown account limit "${field}"`);
    const ok = BOOLEAN_LIMITS.has(field) ? typeof value === "boolean" : Number.isSafeInteger(value) && (value as number) >= -1;
    if (!ok) {
      const expected = BOOLEAN_LIMITS.has(field) ? "a boolean" : "an integer >= -1";
      throw new SagaError("invalid-argument", `account limit "${field}" must be ${expected}`, { details: { field, value } });
    }
    (merged as unknown as Record<string, unknown>)[field] = value;
  }
  return merged;
}

/** Whether these limits switch JetStream on for the account (as nats-io/jwt `IsJSEnabled`). */
export function isJetStreamEnabled(limits: Pick<AccountLimits, "mem_storage" | "disk_storage">): boolean {
  return limits.mem_storage !== 0 || limits.disk_storage !== 0;
}
