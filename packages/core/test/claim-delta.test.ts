import { describe, expect, it } from "vitest";
import { claimedSpaces, listedOrClaimed, nextSpacesOf, parseInventoryRecord, type InventoryRecord, type PendingMutation } from "../src/inventory/record.js";
import { intentDelta } from "../src/saga/mutation.js";
import { D } from "./fixtures/records.js";

// The claim stores its delta; the next list has one home (claimedSpaces, docs/saga.md "The claim").
const base: InventoryRecord = { generation: 3, spaces: ["a", "b", "d"], appliedGeneration: 3, configDigest: D("a"), pending: null };
const claim = (extra: Partial<PendingMutation> & Record<string, unknown> = {}): PendingMutation => ({ generation: 4, op: "batch", adds: ["c", "e"], removes: ["b"], writer: "1@h (space add)", leaseId: "L", claimedAt: "t", ...extra });
const parse = (v: unknown) => parseInventoryRecord(JSON.stringify(v));

describe("claimedSpaces: the committed list without the removes, with the adds, sorted", () => {
  it.each([
    ["adds only", ["a", "c"], { adds: ["b", "d"], removes: [] }, ["a", "b", "c", "d"]],
    ["removes only", ["a", "b", "c"], { adds: [], removes: ["a", "c"] }, ["b"]],
    ["both", ["a", "b", "d"], { adds: ["c", "e"], removes: ["b"] }, ["a", "c", "d", "e"]],
    ["an add before every listed name", ["m", "n"], { adds: ["a"], removes: [] }, ["a", "m", "n"]],
    ["nothing", ["a"], { adds: [], removes: [] }, ["a"]],
    ["unsorted input (sorted first)", ["c", "a"], { adds: ["d", "b"], removes: [] }, ["a", "b", "c", "d"]],
  ])("%s", (_what, spaces, delta, next) => {
    expect(claimedSpaces(spaces, delta)).toEqual(next);
  });

  it("is what the step-8 commit records and what a verb treats as trusted", () => {
    const rec = { ...base, pending: claim() };
    expect(nextSpacesOf(rec)).toEqual(["a", "c", "d", "e"]);
    expect(nextSpacesOf(base)).toEqual(base.spaces);
    expect([...listedOrClaimed(rec)].sort()).toEqual(["a", "b", "c", "d", "e"]); // a removal is still trusted until its commit
  });

  it("stays linear at 10,000 tenants (a merge, never an includes in a loop)", () => {
    const spaces = Array.from({ length: 10_000 }, (_, i) => `t${String(i).padStart(6, "0")}`);
    const adds = Array.from({ length: 10_000 }, (_, i) => `u${String(i).padStart(6, "0")}`);
    const t0 = performance.now();
    const next = claimedSpaces(spaces, { adds, removes: spaces.slice(0, 5_000) });
    const ms = performance.now() - t0;
    expect(next.length).toBe(15_000);
    expect(next[0]).toBe("t005000");
    // A quadratic rule takes seconds here; the bound is loose so a loaded machine cannot flake it.
    expect(ms).toBeLessThan(500);
  });
});

describe("intentDelta: what a claim stores, O(n + change)", () => {
  it("adds only what the list lacks and removes only what it holds", () => {
    expect(intentDelta(["a", "b"], { adds: ["c", "a", "c"], removes: ["z", "b"] })).toEqual({ added: ["c"], removed: ["b"] });
  });
  it("a name both added and removed stays as it is", () => {
    expect(intentDelta(["a", "b"], { adds: ["b", "x"], removes: ["b", "x"] })).toEqual({ added: ["x"], removed: [] });
  });
  it("a reconcile target is diffed against the list", () => {
    expect(intentDelta(["a", "b", "c"], { adds: [], removes: [], target: ["d", "a"] })).toEqual({ added: ["d"], removed: ["b", "c"] });
  });
  it("derived back, the delta gives the intended list", () => {
    const current = ["a", "b", "c"];
    const d = intentDelta(current, { adds: [], removes: [], target: ["d", "a"] });
    expect(claimedSpaces(current, { adds: d.added, removes: d.removed })).toEqual(["a", "d"]);
  });
  it("one add at 10,000 tenants is well under a millisecond per thousand names", () => {
    const current = Array.from({ length: 10_000 }, (_, i) => `t${String(i).padStart(6, "0")}`);
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) intentDelta(current, { adds: [`n${i}`], removes: [] });
    const perAdd = (performance.now() - t0) / 20;
    expect(intentDelta(current, { adds: ["n0"], removes: [] })).toEqual({ added: ["n0"], removed: [] });
    expect(perAdd).toBeLessThan(100); // the old includes-in-a-loop rule: ~10^8 comparisons (seconds)
  });
});

describe("parse: the claim as stored", () => {
  it("accepts the delta claim (no next list)", () => {
    const rec = { ...base, pending: claim() };
    expect(parse(rec)).toEqual(rec);
  });

  it.each([
    ["an add the committed list already holds", { adds: ["a"] }, "pending.adds names a space the committed list already holds"],
    ["a remove the committed list does not hold", { removes: ["z"] }, "pending.removes names a space the committed list does not hold"],
  ])("refuses a claim with %s", (_what, patch, reason) => {
    expect(parse({ ...base, pending: claim(patch) })).toBe(reason);
  });
});
