import { describe, expect, it } from "vitest";
import {
  DEFAULT_JETSTREAM_BUDGET,
  DEFAULT_SPACE_QUOTA,
  SERVER_MAX_PAYLOAD,
  UNLIMITED_JETSTREAM,
  assertQuotaUsable,
  assertWithinBudget,
  createAccountTrust,
  createBrokerTrust,
  isCotalError,
  limitsQuota,
  parseAccountRecord,
  parseBytes,
  parseQuota,
  quotaLimits,
  resolveBudget,
  resolveQuota,
  parseInventoryRecord,
  resignAccountLimits,
  toAccountRecord,
  verifyJwt,
  type InventoryRecord,
  type PendingMutation,
} from "../src/internal.js";
import { describePending } from "../src/saga/finish.js";
import { describeError } from "../src/entries/errors.js";
import { codeOf } from "./fixtures/code-of.js";

const MiB = 1024 ** 2;


describe("parseBytes / parseQuota", () => {
  it("reads binary units, plain byte counts and -1", () => {
    expect(parseBytes("64M", "x")).toBe(64 * MiB);
    expect(parseBytes("1G", "x")).toBe(1024 ** 3);
    expect(parseBytes("512KiB", "x")).toBe(512 * 1024);
    expect(parseBytes("2mb", "x")).toBe(2 * MiB);
    expect(parseBytes("1048576", "x")).toBe(MiB);
    expect(parseBytes(4096, "x")).toBe(4096);
    expect(parseBytes("-1", "x")).toBe(-1);
  });
  it.each(["", "1.5G", "-2", "-1M", "ten", "1Q", "1e9"])("refuses %j as invalid-argument", (v) => {
    expect(codeOf(() => parseBytes(v, "x"))).toBe("invalid-argument");
  });
  it("maps each field by kind and refuses unknown keys and bad counts", () => {
    expect(parseQuota({ disk: "1G", conns: "64", streams: 8, payload: "512K" }, "f")).toEqual({ disk: 1024 ** 3, conns: 64, streams: 8, payload: 512 * 1024 });
    expect(codeOf(() => parseQuota({ bogus: 1 }, "f"))).toBe("invalid-argument");
    expect(codeOf(() => parseQuota({ conns: "1G" }, "f"))).toBe("invalid-argument");
    expect(codeOf(() => parseQuota({ subs: 1.5 }, "f"))).toBe("invalid-argument");
  });
});

describe("space quota", () => {
  it("round-trips through account-JWT limits and keeps the other limits unlimited", () => {
    const q = resolveQuota({ disk: 8 * MiB, conns: 3 });
    const limits = quotaLimits(q);
    expect(limits).toMatchObject({ disk_storage: 8 * MiB, conn: 3, streams: DEFAULT_SPACE_QUOTA.streams, leaf: 0, imports: -1, wildcards: true });
    expect(limitsQuota(limits)).toEqual(q);
  });
  it("the defaults are usable", () => {
    expect(() => assertQuotaUsable("alpha", DEFAULT_SPACE_QUOTA)).not.toThrow();
  });
  it.each([
    ["unbounded disk", { disk: -1 }],
    ["unbounded memory", { mem: -1 }],
    ["disk below the template's need", { disk: 1024 }],
    ["fewer streams than the template", { streams: 2 }],
    ["zero connections", { conns: 0 }],
    ["payload over the server's max_payload", { payload: SERVER_MAX_PAYLOAD + 1 }],
  ])("refuses %s", (_what, overrides) => {
    expect(codeOf(() => assertQuotaUsable("alpha", resolveQuota(overrides)))).toBe("invalid-argument");
  });
});

describe("broker budget", () => {
  const holder = (name: string, disk: number, mem = 0) => ({ name, limits: { disk_storage: disk, mem_storage: mem } });
  const budget = { maxFileStore: 100 * MiB, maxMemoryStore: 10 * MiB, reserveFile: 20 * MiB, reserveMemory: 2 * MiB };

  it("admits caps that sum to the max minus the reserve", () => {
    expect(assertWithinBudget(budget, [holder("a", 40 * MiB)], [holder("b", 40 * MiB)]).disk).toBe(80 * MiB);
  });
  it("refuses one byte more with the numbers and a runnable next", () => {
    try {
      assertWithinBudget(budget, [holder("a", 40 * MiB)], [holder("b", 40 * MiB + 1)]);
      expect.unreachable();
    } catch (err) {
      expect(isCotalError(err, "quota-overcommit")).toBe(true);
      const e = err as { message: string; next?: string; details?: Record<string, unknown> };
      expect(e.message).toContain("80 MiB");
      expect(e.details).toMatchObject({ resource: "disk", committed: 40 * MiB, max: 100 * MiB, reserve: 20 * MiB, free: 40 * MiB });
      expect(describeError(err, { argv: ["space", "add", "b", "--max-disk", "41943041", "--max-conns", "3"] }).next).toMatch(/^cotal space add b --max-disk 40M --max-conns 3 /);
    }
  });
  it("splits the free room across a batch and checks memory too", () => {
    try {
      assertWithinBudget(budget, [], [holder("a", MiB, 5 * MiB), holder("b", MiB, 5 * MiB)]);
      expect.unreachable();
    } catch (err) {
      expect(isCotalError(err, "quota-overcommit")).toBe(true);
      expect(describeError(err, { argv: ["space", "add", "a", "b"] }).next).toContain("--max-mem 4M");
    }
  });
  it("names unbounded spaces instead of summing them", () => {
    expect(assertWithinBudget(budget, [holder("legacy", -1, -1)], [holder("b", MiB)]).unbounded).toEqual(["legacy"]);
  });
  it("resolves settings with defaults and refuses a reserve that eats the max", () => {
    expect(resolveBudget(undefined, "s")).toEqual(DEFAULT_JETSTREAM_BUDGET);
    expect(resolveBudget({ maxFileStore: "64M", reserveFile: "8M" }, "s")).toMatchObject({ maxFileStore: 64 * MiB, reserveFile: 8 * MiB });
    expect(codeOf(() => resolveBudget({ maxFileStore: "8M", reserveFile: "8M" }, "s"))).toBe("corrupt-record");
    expect(codeOf(() => resolveBudget({ maxFile: "8M" }, "s"))).toBe("corrupt-record");
    expect(codeOf(() => resolveBudget([], "s"))).toBe("corrupt-record");
  });
  it("the default quota fits 10,000 spaces in the default budget", () => {
    const d = DEFAULT_JETSTREAM_BUDGET;
    expect(10_000 * DEFAULT_SPACE_QUOTA.disk).toBeLessThanOrEqual(d.maxFileStore - d.reserveFile);
    expect(10_000 * DEFAULT_SPACE_QUOTA.mem).toBeLessThanOrEqual(d.maxMemoryStore - d.reserveMemory);
  });
});

describe("account record limits", () => {
  const broker = createBrokerTrust({ retainSystemSigningSeed: false });
  it("records the signed limits and refuses a record whose copy disagrees with the JWT", () => {
    const rec = toAccountRecord(createAccountTrust(broker.operator, "alpha", { kind: "space", limits: quotaLimits(resolveQuota({ disk: 8 * MiB })) }));
    const text = JSON.stringify(rec);
    const parsed = parseAccountRecord(text, { kind: "space", name: "alpha" });
    expect(typeof parsed).toBe("object");
    expect((parsed as typeof rec).limits.disk_storage).toBe(8 * MiB);
    const tampered = JSON.stringify({ ...rec, limits: { ...rec.limits, disk_storage: 1 } });
    expect(parseAccountRecord(tampered, { kind: "space", name: "alpha" })).toMatch(/limits differ/);
  });
  it("a record written before quotas reads its limits from the JWT", () => {
    const rec = toAccountRecord(createAccountTrust(broker.operator, "old", { kind: "space", limits: UNLIMITED_JETSTREAM }));
    const { limits: _l, ...legacy } = rec;
    const parsed = parseAccountRecord(JSON.stringify(legacy), { kind: "space", name: "old" });
    expect((parsed as typeof rec).limits).toEqual(UNLIMITED_JETSTREAM);
  });
});

describe("space limits: re-signing and the claim", () => {
  const broker = createBrokerTrust({ retainSystemSigningSeed: false });
  const other = createBrokerTrust({ retainSystemSigningSeed: false });
  const acct = createAccountTrust(broker.operator, "alpha", { kind: "space" });

  it("re-signs the same account with new limits and keeps every other claim", () => {
    const { jwt, limits } = resignAccountLimits(broker.operator, acct.jwt, { disk_storage: 16 * MiB });
    const before = verifyJwt(acct.jwt);
    const after = verifyJwt(jwt);
    expect(after.sub).toBe(before.sub);
    expect(after.iss).toBe(broker.operator.publicKey);
    expect(after.name).toBe("alpha");
    expect(after.nats.signing_keys).toEqual(before.nats.signing_keys);
    expect(after.nats.limits).toEqual({ ...acct.limits, disk_storage: 16 * MiB });
    expect(limits.disk_storage).toBe(16 * MiB);
  });
  it("refuses a JWT another operator issued", () => {
    expect(codeOf(() => resignAccountLimits(other.operator, acct.jwt, { conn: 1 }))).toBe("foreign-operator");
  });

  const pending = (extra: Record<string, unknown>) =>
    JSON.stringify({
      generation: 3,
      spaces: ["alpha", "beta"],
      appliedGeneration: 3,
      configDigest: null,
      pending: { generation: 4, op: "limits", adds: [], removes: [], writer: "w", leaseId: "l", claimedAt: "t", ...extra },
    });
  it("a limits claim carries its change, and only a limits claim does", () => {
    const ok = parseInventoryRecord(pending({ limits: { space: "alpha", from: "a.b.c", to: "d.e.f" } }));
    expect(typeof ok).toBe("object");
    expect(describePending((ok as InventoryRecord).pending as PendingMutation)).toMatch(/^limits alpha by w/);
    expect(parseInventoryRecord(pending({}))).toMatch(/pending.limits/);
    expect(parseInventoryRecord(pending({ limits: { space: "gamma", from: "a", to: "b" } }))).toMatch(/outside/);
    expect(parseInventoryRecord(pending({ limits: { space: "alpha", from: 1, to: "b" } }))).toMatch(/malformed/);
    expect(parseInventoryRecord(pending({ op: "add", limits: { space: "alpha", from: "a", to: "b" } }))).toMatch(/pending.limits/);
  });
});
