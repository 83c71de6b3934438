/**
 * Account limits as nats-io/jwt v2 serialises `OperatorLimits` (NatsLimits + AccountLimits +
 * JetStreamLimits, flattened into `nats.limits`). -1 means unlimited; JetStream is on when
 * mem_storage or disk_storage is non-zero.
 */
import { CotalError } from "../errors.js";

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

/** Core NATS unlimited: what every account cotal signs allows outside JetStream. */
const CORE_UNLIMITED = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } as const;

/** Every JetStream limit set to one value: -1 unlimited, 0 off. */
function jetstreamAll(n: -1 | 0) {
  return { mem_storage: n, disk_storage: n, streams: n, consumer: n, max_ack_pending: n, mem_max_stream_bytes: n, disk_max_stream_bytes: n, max_bytes_required: false };
}

/** Everything unlimited, JetStream on: the default for space and authority accounts. */
export const UNLIMITED_JETSTREAM: Readonly<AccountLimits> = Object.freeze({ ...CORE_UNLIMITED, ...jetstreamAll(-1) });

/** Core NATS unlimited, JetStream off (storage 0): the system account. */
export const NO_JETSTREAM: Readonly<AccountLimits> = Object.freeze({ ...CORE_UNLIMITED, ...jetstreamAll(0) });

const BOOLEAN_LIMITS: ReadonlySet<string> = new Set(["wildcards", "max_bytes_required"]);

/**
 * `base` overlaid with the defined fields of `overrides`, every field checked. The result always
 * carries every field: nats-server treats a missing conn/subs as 0 and refuses every connection.
 */
export function mergeLimits(base: Readonly<AccountLimits>, overrides: Partial<AccountLimits> = {}): AccountLimits {
  const merged: AccountLimits = { ...base };
  for (const [field, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!Object.hasOwn(base, field)) throw new CotalError("invalid-argument", `unknown account limit "${field}"`);
    const ok = BOOLEAN_LIMITS.has(field) ? typeof value === "boolean" : Number.isSafeInteger(value) && (value as number) >= -1;
    if (!ok) {
      const expected = BOOLEAN_LIMITS.has(field) ? "a boolean" : "an integer >= -1";
      throw new CotalError("invalid-argument", `account limit "${field}" must be ${expected}`, { details: { field, value } });
    }
    (merged as unknown as Record<string, unknown>)[field] = value;
  }
  return merged;
}

/** Whether these limits switch JetStream on for the account (as nats-io/jwt `IsJSEnabled`). */
export function isJetStreamEnabled(limits: Pick<AccountLimits, "mem_storage" | "disk_storage">): boolean {
  return limits.mem_storage !== 0 || limits.disk_storage !== 0;
}

/**
 * A space's quota in operator terms (docs/quotas.md). Bytes for disk, mem and payload; counts for
 * the rest; -1 is unlimited. Each field maps to one account-JWT limit.
 */
export interface SpaceQuota {
  disk: number;
  mem: number;
  streams: number;
  consumers: number;
  conns: number;
  subs: number;
  payload: number;
  leafnodes: number;
}

export const QUOTA_FIELDS = ["disk", "mem", "streams", "consumers", "conns", "subs", "payload", "leafnodes"] as const satisfies readonly (keyof SpaceQuota)[];
const BYTE_FIELDS: ReadonlySet<keyof SpaceQuota> = new Set(["disk", "mem", "payload"]);

const QUOTA_TO_LIMIT = {
  disk: "disk_storage",
  mem: "mem_storage",
  streams: "streams",
  consumers: "consumer",
  conns: "conn",
  subs: "subs",
  payload: "payload",
  leafnodes: "leaf",
} as const satisfies Record<keyof SpaceQuota, keyof AccountLimits>;

const UNITS: Record<string, number> = { "": 1, B: 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** "64M", "1G", "512KiB", "1048576" or -1 → bytes (binary units, as nats-server reads its config). */
export function parseBytes(value: unknown, what: string): number {
  if (typeof value === "number") {
    if (Number.isSafeInteger(value) && value >= -1) return value;
  } else if (typeof value === "string") {
    const m = /^\s*(-1|\d+)\s*([KMGT]?)(?:I?B)?\s*$/i.exec(value);
    if (m && (m[1] !== "-1" || m[2] === "")) {
      const bytes = Number(m[1]) * (UNITS[(m[2] ?? "").toUpperCase()] as number);
      if (Number.isSafeInteger(bytes)) return bytes;
    }
  }
  // No `next` here: the caller knows the command (the CLI prints its --help line with the root).
  throw new CotalError("invalid-argument", `${what} must be a size in binary units K, M, G or T such as 64M, 1G, or a byte count (-1 for unlimited), not ${JSON.stringify(value)}`, {
    details: { field: what, value },
  });
}

function parseCount(value: unknown, what: string): number {
  const n = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n === "number" && Number.isSafeInteger(n) && n >= -1) return n;
  throw new CotalError("invalid-argument", `${what} must be an integer >= -1 (-1 for unlimited), not ${JSON.stringify(value)}`, { details: { field: what, value } });
}

/**
 * Reads a partial quota from flags or a `--limits FILE` object: known keys only, sizes or counts
 * by field. Range rules that depend on the template are {@link assertQuotaUsable}'s.
 */
export function parseQuota(input: Readonly<Record<string, unknown>>, source: string, label: (field: keyof SpaceQuota) => string = (f) => `${source} ${f}`): Partial<SpaceQuota> {
  const out: Partial<SpaceQuota> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!(QUOTA_FIELDS as readonly string[]).includes(key)) {
      throw new CotalError("invalid-argument", `unknown limit "${key}" in ${source}; known: ${QUOTA_FIELDS.join(", ")}`, { next: "see README \"Quotas\" for the fields", details: { field: key } });
    }
    const field = key as keyof SpaceQuota;
    out[field] = BYTE_FIELDS.has(field) ? parseBytes(value, label(field)) : parseCount(value, label(field));
  }
  return out;
}

/** The account-JWT limits for a quota: everything the quota does not name stays as UNLIMITED_JETSTREAM. */
export function quotaLimits(quota: Readonly<SpaceQuota>): AccountLimits {
  const overrides: Partial<AccountLimits> = {};
  for (const f of QUOTA_FIELDS) (overrides as Record<string, number>)[QUOTA_TO_LIMIT[f]] = quota[f];
  return mergeLimits(UNLIMITED_JETSTREAM, overrides);
}

/** The quota view of account-JWT limits (the inverse of {@link quotaLimits} on its fields). */
export function limitsQuota(limits: Readonly<AccountLimits>): SpaceQuota {
  const out = {} as SpaceQuota;
  for (const f of QUOTA_FIELDS) out[f] = limits[QUOTA_TO_LIMIT[f]];
  return out;
}

/** Limits as signed into an account JWT, completed with UNLIMITED_JETSTREAM for absent fields. */
export function limitsOfClaims(nats: Readonly<Record<string, unknown>>): AccountLimits {
  const raw = nats.limits;
  if (typeof raw !== "object" || raw === null) return { ...UNLIMITED_JETSTREAM };
  return { ...UNLIMITED_JETSTREAM, ...(raw as Partial<AccountLimits>) };
}

/** "64 MiB", "1 GiB", "unlimited": how sizes are printed in refusals and listings. */
export function formatBytes(n: number): string {
  if (n < 0) return "unlimited";
  for (const [unit, size] of [["TiB", 1024 ** 4], ["GiB", 1024 ** 3], ["MiB", 1024 ** 2], ["KiB", 1024]] as const) {
    if (n >= size) {
      const v = n / size;
      return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
    }
  }
  return `${n} B`;
}

/** Field-by-field equality over every AccountLimits field (key order does not matter). */
export function sameLimits(a: Readonly<Record<string, unknown>>, b: Readonly<AccountLimits>): boolean {
  const keys = Object.keys(UNLIMITED_JETSTREAM);
  return Object.keys(a).length === keys.length && keys.every((k) => a[k] === (b as unknown as Record<string, unknown>)[k]);
}

/**
 * What a space may use unless `space add`/`space limits` say otherwise (README "Quotas"). Sized so
 * 10,000 tenants at the defaults fit the default broker budget (broker/quota-budget.ts).
 */
export const DEFAULT_SPACE_QUOTA: Readonly<SpaceQuota> = Object.freeze({
  disk: 64 * 1024 ** 2,
  mem: 4 * 1024 ** 2,
  streams: 16,
  consumers: 256,
  conns: 128,
  subs: 10_000,
  payload: 1024 ** 2,
  leafnodes: 0,
});

/** Below this a space cannot hold its template's streams and buckets. */
export const MIN_SPACE_DISK = 1024 ** 2;
