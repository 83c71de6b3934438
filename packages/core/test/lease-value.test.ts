import { describe, expect, it } from "vitest";
import {
  assertLeaseKey,
  encodeLeaseValue,
  LEASE_BUCKET,
  LEASE_TTL_MS,
  leaseHeldError,
  leaseLostError,
  leaseRemainingMs,
  newLeaseValue,
  parseLeaseValue,
  type Lease,
  type LeaseValue,
} from "../src/inventory/lease.js";
import { isCotalError } from "../src/errors.js";

const holder = { pid: 42, host: "h1", verb: "space add" };
const bytes = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

describe("lease key", () => {
  it.each(["root", "a.b", "ab.cd.ef", "a-b_c/d=e", "A9", "x".repeat(255)])("accepts %j", (key) => {
    expect(() => assertLeaseKey(key)).not.toThrow();
  });

  it.each(["", "a b", ".a", "a.", "a..b", "a.*", ">", "a.>", "x.y z", "é", "x".repeat(256), "*"])("refuses %j with a typed error naming the key", (key) => {
    try {
      assertLeaseKey(key);
      expect.unreachable();
    } catch (e) {
      expect(isCotalError(e, "invalid-argument")).toBe(true);
      expect((e as Error).message).toBe(`lease key ${JSON.stringify(key)} is not a valid KV key (letters, digits, - / _ = and inner dots)`);
      expect((e as { details: unknown }).details).toEqual({ key });
      expect((e as { next: string }).next).toMatch(/derived from the root/);
    }
  });

  it("refuses a non-string key", () => {
    expect(() => assertLeaseKey(7 as unknown as string)).toThrow(/not a valid KV key/);
  });

  it("the bucket is whole-broker (no space token) and the TTL is 10 s", () => {
    expect(LEASE_BUCKET).toBe("cotal_broker_cfgwriter");
    expect(LEASE_TTL_MS).toBe(10_000);
  });
});

describe("lease value codec", () => {
  it("a new value carries the holder, a unique id and the acquisition time", () => {
    const now = new Date("2026-01-02T03:04:05.678Z");
    const a = newLeaseValue(holder, now);
    const b = newLeaseValue(holder, now);
    expect(a).toEqual({ leaseId: a.leaseId, pid: 42, host: "h1", verb: "space add", acquiredAt: "2026-01-02T03:04:05.678Z" });
    expect(a.leaseId).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.leaseId).not.toBe(b.leaseId);
    expect(Date.parse(newLeaseValue(holder).acquiredAt)).toBeGreaterThan(now.getTime());
  });

  it("round-trips through its bytes", () => {
    const v: LeaseValue = { ...newLeaseValue(holder), renewedAt: "2026-01-01T00:00:00.000Z" };
    expect(JSON.parse(new TextDecoder().decode(encodeLeaseValue(v)))).toEqual(v);
    expect(parseLeaseValue(encodeLeaseValue(v))).toEqual(v);
  });

  it.each([
    ["not JSON", "{"],
    ["invalid UTF-8", new Uint8Array([0x7b, 0xff, 0x7d])],
    ["null", "null"],
    ["a number", "5"],
    ["a missing leaseId", { pid: 1, host: "h", verb: "v", acquiredAt: "t" }],
    ["a string pid", { leaseId: "L", pid: "1", host: "h", verb: "v", acquiredAt: "t" }],
    ["a missing host", { leaseId: "L", pid: 1, verb: "v", acquiredAt: "t" }],
    ["a numeric verb", { leaseId: "L", pid: 1, host: "h", verb: 2, acquiredAt: "t" }],
    ["a missing acquiredAt", { leaseId: "L", pid: 1, host: "h", verb: "v" }],
  ])("reads %s as a value cotal did not write", (_what, v) => {
    expect(parseLeaseValue(v instanceof Uint8Array ? v : bytes(v))).toBeUndefined();
  });
});

describe("lease TTL arithmetic", () => {
  const written = new Date(1_000_000);
  it("counts down from the TTL and never goes negative", () => {
    expect(leaseRemainingMs(written, 10_000, 1_000_000)).toBe(10_000);
    expect(leaseRemainingMs(written, 10_000, 1_004_000)).toBe(6_000);
    expect(leaseRemainingMs(written, 10_000, 1_010_000)).toBe(0);
    expect(leaseRemainingMs(written, 10_000, 1_020_000)).toBe(0);
    expect(leaseRemainingMs(new Date(Date.now()), 10_000)).toBeGreaterThan(9_000);
  });
});

describe("lease refusals", () => {
  const held: LeaseValue = { leaseId: "L1", pid: 7, host: "h2", verb: "space rm", acquiredAt: "2026-01-01T00:00:00.000Z" };

  it("lease-held names the holder, the remaining TTL and when to re-run", () => {
    const cause = new Error("cas");
    const e = leaseHeldError("k", held, 2_300, cause);
    expect(e.code).toBe("lease-held");
    expect(e.message).toBe("the broker writer lease k is held by pid 7 on h2 (space rm); its TTL ends in about 3s unless the holder renews it");
    expect(e.next).toBe("sleep 3 && {rerun}   # a crashed holder's lease expires by itself; cotal status shows the holder");
    expect(e.details).toEqual({ leaseKey: "k", holder: { pid: 7, host: "h2", verb: "space rm", acquiredAt: held.acquiredAt }, remainingMs: 2_300 });
    expect(e.cause).toBe(cause);
  });

  it("an unreadable holder and a churning lease get their own wording; the re-run is never in 0s", () => {
    const unknown = leaseHeldError("k", undefined, 0);
    expect(unknown.message).toContain("held by a writer whose lease value cotal cannot read;");
    expect(unknown.message).toContain("in about 0s");
    expect(unknown.next).toMatch(/^sleep 1 && \{rerun\} /);
    expect(unknown.details).toEqual({ leaseKey: "k", holder: null, remainingMs: 0 });
    const churn = leaseHeldError("k", "churn", 10_000);
    expect(churn.message).toContain("held by other writers (it changed hands on every attempt);");
    expect(churn.next).toMatch(/^sleep 10 && \{rerun\} /);
    expect(churn.details).toEqual({ leaseKey: "k", holder: null, remainingMs: 10_000 });
  });

  it("lease-lost names the lease and says what to run", () => {
    const lease: Lease = { key: "k", leaseId: "L1", revision: 9, holder, acquiredAt: 0 };
    const cause = new Error("gone");
    const e = leaseLostError(lease, "the value changed", cause);
    expect(e.code).toBe("lease-lost");
    expect(e.message).toBe("the broker writer lease k is no longer ours: the value changed");
    expect(e.next).toBe("{rerun}   # cotal status shows who holds the lease now");
    expect(e.details).toEqual({ leaseKey: "k", leaseId: "L1", revision: 9 });
    expect(e.cause).toBe(cause);
  });
});
