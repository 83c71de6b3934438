/**
 * The writer lease (docs/saga.md, step 0): one key per broker root in a TTL bucket. This module is the
 * pure half (value codec, TTL arithmetic, refusals); the CAS I/O lives in lease-store.ts.
 */
import { randomUUID } from "node:crypto";
import { RERUN, CotalError } from "../errors.js";

/** No space token on purpose: a whole-broker resource no tenant may reach (docs/saga.md, "The authority store"). */
export const LEASE_BUCKET = "cotal_broker_cfgwriter";
export const LEASE_TTL_MS = 10_000;

/** Who holds a lease, for the refusal an operator reads. */
export interface LeaseHolder {
  pid: number;
  host: string;
  verb: string;
}

export interface Lease {
  key: string;
  /** Unique per acquisition; the fence (steps 5-7) re-checks this exact id. */
  leaseId: string;
  /** KV revision of our latest write; renew and release CAS against it. */
  revision: number;
  holder: LeaseHolder;
  /** Client clock (ms since epoch) when the lease was acquired. */
  acquiredAt: number;
}

/** The stored value. The leaseId makes every acquisition's bytes unique, so a read-back can tell ours apart. */
export interface LeaseValue extends LeaseHolder {
  leaseId: string;
  acquiredAt: string;
  renewedAt?: string;
}

// The KV key alphabet (nats.js validateKey), minus wildcards; checked here so a bad key is a typed refusal.
const LEASE_KEY = /^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$/;

export function assertLeaseKey(key: string): void {
  if (typeof key !== "string" || !LEASE_KEY.test(key) || key.length > 255) {
    throw new CotalError("invalid-argument", `lease key ${JSON.stringify(key)} is not a valid KV key (letters, digits, - / _ = and inner dots)`, {
      next: "pass the broker root's lease key (derived from the root, not typed by hand)",
      details: { key },
    });
  }
}

export function newLeaseValue(holder: LeaseHolder, now = new Date()): LeaseValue {
  return { leaseId: randomUUID(), pid: holder.pid, host: holder.host, verb: holder.verb, acquiredAt: now.toISOString() };
}

export function encodeLeaseValue(v: LeaseValue): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(v));
}

/** The holder fields of a stored lease, or undefined when the bytes are not a lease we wrote. */
export function parseLeaseValue(bytes: Uint8Array): LeaseValue | undefined {
  try {
    const v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as Partial<LeaseValue> | null;
    if (typeof v !== "object" || v === null) return undefined;
    if (typeof v.leaseId !== "string" || typeof v.pid !== "number" || typeof v.host !== "string" || typeof v.verb !== "string") return undefined;
    if (typeof v.acquiredAt !== "string") return undefined;
    return v as LeaseValue;
  } catch {
    return undefined;
  }
}

/** How long until the server's max_age drops a value written at `writtenAt` (never negative). */
export function leaseRemainingMs(writtenAt: Date, ttlMs: number, now = Date.now()): number {
  return Math.max(0, ttlMs - (now - writtenAt.getTime()));
}

/** `holder` undefined: a value cotal cannot read; "churn": it changed hands on every attempt. */
export function leaseHeldError(key: string, holder: LeaseValue | undefined | "churn", remainingMs: number, cause?: unknown): CotalError {
  const secs = Math.ceil(remainingMs / 1000);
  const who =
    holder === "churn"
      ? "other writers (it changed hands on every attempt)"
      : holder
        ? `pid ${holder.pid} on ${holder.host} (${holder.verb})`
        : "a writer whose lease value cotal cannot read";
  return new CotalError("lease-held", `the broker writer lease ${key} is held by ${who}; its TTL ends in about ${secs}s unless the holder renews it`, {
    next: `sleep ${Math.max(secs, 1)} && ${RERUN}   # a crashed holder's lease expires by itself; cotal status shows the holder`,
    details: {
      leaseKey: key,
      holder: holder && holder !== "churn" ? { pid: holder.pid, host: holder.host, verb: holder.verb, acquiredAt: holder.acquiredAt } : null,
      remainingMs,
    },
    cause,
  });
}

export function leaseLostError(lease: Lease, why: string, cause?: unknown): CotalError {
  return new CotalError("lease-lost", `the broker writer lease ${lease.key} is no longer ours: ${why}`, {
    next: `${RERUN}   # cotal status shows who holds the lease now`,
    details: { leaseKey: lease.key, leaseId: lease.leaseId, revision: lease.revision },
    cause,
  });
}
