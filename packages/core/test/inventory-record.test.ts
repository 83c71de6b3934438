import { describe, expect, it } from "vitest";
import { accountedNames, diffLists, parseInventoryRecord, seedRecord, sortedNames, type InventoryRecord, type PendingMutation } from "../src/inventory/record.js";

// Every field of the stored inventory is checked on read (001 §3.3): a record cotal cannot fully
// read is refused with the reason, never half-trusted.
const D = (c: string) => `sha256:${c.repeat(64)}`;
const pending: PendingMutation = { generation: 4, op: "add", adds: ["c"], removes: [], writer: "1@h (space add)", leaseId: "L", claimedAt: "2026-01-01T00:00:00.000Z" };
const ok: InventoryRecord = { generation: 3, spaces: ["a", "b"], appliedGeneration: 3, configDigest: D("a"), pending: null };
const parse = (v: unknown) => parseInventoryRecord(JSON.stringify(v));
const withPending = (p: Record<string, unknown>) => parse({ ...ok, pending: { ...pending, ...p } });

describe("parseInventoryRecord: the reason for each refusal", () => {
  it.each([
    ["null", null, "not an object"],
    ["a number", 7, "not an object"],
    ["a string", "x", "not an object"],
  ])("a JSON %s is not a record", (_what, v, reason) => {
    expect(parse(v)).toBe(reason);
  });

  it.each([
    ["generation 0", { generation: 0 }, "generation is not a positive integer"],
    ["a fractional generation", { generation: 1.5 }, "generation is not a positive integer"],
    ["appliedGeneration -1", { appliedGeneration: -1 }, "appliedGeneration is not an integer"],
    ["a string appliedGeneration", { appliedGeneration: "3" }, "appliedGeneration is not an integer"],
    ["a non-string space", { spaces: ["a", 1] }, "spaces is not a list of distinct valid space names"],
    ["spaces that is not a list", { spaces: "a" }, "spaces is not a list of distinct valid space names"],
    ["a digest with a prefix", { configDigest: `x${D("a")}` }, "configDigest is not sha256:<hex> or null"],
    ["a digest with a suffix", { configDigest: `${D("a")}0` }, "configDigest is not sha256:<hex> or null"],
    ["a numeric digest", { configDigest: 5 }, "configDigest is not sha256:<hex> or null"],
    ["a digest inside a list", { configDigest: [D("a")] }, "configDigest is not sha256:<hex> or null"],
    ["a missing digest", { configDigest: undefined }, "configDigest is not sha256:<hex> or null"],
    ["an invalid excluded name", { excluded: ["OK"] }, "excluded is not a list of distinct valid space names"],
    ["duplicate excluded names", { excluded: ["x", "x"] }, "excluded is not a list of distinct valid space names"],
    ["a missing pending field", { pending: undefined }, "pending is not an object or null"],
    ["a string pending", { pending: "p" }, "pending is not an object or null"],
  ])("refuses %s", (_what, patch, reason) => {
    expect(parse({ ...ok, ...patch })).toBe(reason);
  });

  it.each([
    ["a missing generation", { generation: undefined }, "pending.generation is not an integer"],
    ["an unknown op", { op: "merge" }, "pending.op is unknown"],
    ["a malformed adds", { adds: ["A"] }, "pending lists are malformed"],
    ["a malformed removes", { removes: "b" }, "pending lists are malformed"],
    ["a missing writer", { writer: undefined }, "pending writer/leaseId/claimedAt missing"],
    ["a numeric leaseId", { leaseId: 1 }, "pending writer/leaseId/claimedAt missing"],
    ["a missing claimedAt", { claimedAt: undefined }, "pending writer/leaseId/claimedAt missing"],
    ["a malformed stagedDigest", { stagedDigest: "sha256:xyz" }, "pending.stagedDigest is malformed"],
    ["a numeric stagedDigest", { stagedDigest: 1 }, "pending.stagedDigest is malformed"],
    ["a null stagedDigest", { stagedDigest: null }, "pending.stagedDigest is malformed"],
    ["a stagedDigest inside a list", { stagedDigest: [D("b")] }, "pending.stagedDigest is malformed"],
    ["a malformed excluded", { excluded: ["x", "x"] }, "pending.excluded is malformed"],
    ["a mint that is not an add", { mints: ["d"] }, "pending.mints is not a subset of pending.adds"],
    ["a malformed mints", { mints: "c" }, "pending.mints is not a subset of pending.adds"],
    ["a repeated mint", { mints: ["c", "c"] }, "pending.mints is not a subset of pending.adds"],
  ])("refuses a pending claim with %s", (_what, patch, reason) => {
    expect(withPending(patch)).toBe(reason);
  });

  it("accepts every well-formed shape unchanged", () => {
    expect(parse(ok)).toEqual(ok);
    expect(parse({ ...ok, generation: 1, appliedGeneration: 0, configDigest: null })).toEqual({ ...ok, generation: 1, appliedGeneration: 0, configDigest: null });
    expect(parse({ ...ok, excluded: ["x"] })).toEqual({ ...ok, excluded: ["x"] });
    for (const op of ["add", "remove", "reconcile", "batch"] as const) expect(withPending({ op })).toEqual({ ...ok, pending: { ...pending, op } });
    const full = { ...pending, stagedDigest: D("b"), excluded: ["x"], mints: ["c"] };
    expect(withPending({ mints: [] })).toEqual({ ...ok, pending: { ...pending, mints: [] } });
    expect(parse({ ...ok, pending: full })).toEqual({ ...ok, pending: full });
  });
});

describe("record helpers", () => {
  it("sortedNames sorts and de-duplicates", () => {
    expect(sortedNames(["c", "a", "b", "a"])).toEqual(["a", "b", "c"]);
    expect(sortedNames(new Set(["z", "m"]))).toEqual(["m", "z"]);
  });

  it("seedRecord is generation 1 with sorted spaces; applied only when proven", () => {
    expect(seedRecord(["b", "a"], D("a"), true)).toEqual({ generation: 1, spaces: ["a", "b"], appliedGeneration: 1, configDigest: D("a"), pending: null });
    expect(seedRecord(["a"], null, false)).toEqual({ generation: 1, spaces: ["a"], appliedGeneration: 0, configDigest: null, pending: null });
  });

  it("accountedNames and diffLists count excluded records as accounted for, never as kv-only", () => {
    expect([...accountedNames({ ...ok, excluded: ["x"] })].sort()).toEqual(["a", "b", "x"]);
    expect([...accountedNames(ok)].sort()).toEqual(["a", "b"]);
    expect(diffLists(["a", "x", "y"], { ...ok, excluded: ["x"] })).toEqual({ diskOnly: ["y"], kvOnly: ["b"] });
    expect(diffLists(["a", "b"], ok)).toEqual({ diskOnly: [], kvOnly: [] });
  });
});
