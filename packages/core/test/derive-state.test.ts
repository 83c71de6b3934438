import { describe, expect, it } from "vitest";
import { deriveState, planReconcile } from "../src/internal.js";

import { D, stateInput as input, stateRec as rec } from "./fixtures/records.js";
const pending = { generation: 4, op: "add" as const, adds: ["c"], removes: [], writer: "w", leaseId: "L", claimedAt: "t" };

describe("deriveState (001 §8 vocabulary)", () => {
  it.each([
    ["clean", input()],
    ["absent", input({ exists: false })],
    ["uncertain", input({ corrupt: 1 })],
    ["stopped", input({ running: false })],
    ["PENDING", input({ record: rec({ pending }) })],
    ["PROMOTED-BUT-UNCOMMITTED", input({ record: rec({ pending: { ...pending, stagedDigest: D("b") } }), serverConfDigest: D("b") })],
    ["PROVEN-BUT-UNCOMMITTED", input({ record: rec({ appliedGeneration: 4, pending: { ...pending, stagedDigest: D("b") } }) })],
    ["UNPROVEN RELOAD", input({ record: rec({ appliedGeneration: 2 }) })],
    ["UNPROVEN RELOAD", input({ serverConfDigest: D("c") })],
    ["SILENT EVICTION", input({ preloadedNames: ["a"] })],
    ["RESURRECTION RISK", input({ unknownPreloads: 1 })],
    ["divergence", input({ diskNames: ["a", "b", "x"] })],
    ["divergence", input({ diskNames: ["a"], preloadedNames: ["a"] })],
    ["clean", input({ record: rec({ excluded: ["x"] }), diskNames: ["a", "b", "x"] })],
  ] as const)("%s", (state, i) => {
    expect(deriveState(i).state).toBe(state);
  });
});

describe("planReconcile", () => {
  it("--adopt-disk drops kv-only names and admits disk-only records", () => {
    const p = planReconcile("disk", ["a", "x"], rec());
    expect(p.target).toEqual(["a", "x"]);
    expect(p.evicts.map((e) => e.name)).toEqual(["b"]);
    expect(p.admits).toEqual(["x"]);
    expect(p.excluded).toEqual([]);
  });

  it("--adopt-kv keeps the list and excludes the disk-only records, evicting exactly those", () => {
    const p = planReconcile("kv", ["a", "b", "x", "y"], rec());
    expect(p.target).toEqual(["a", "b"]);
    expect(p.evicts.map((e) => e.name)).toEqual(["x", "y"]);
    expect(p.excluded).toEqual(["x", "y"]);
  });

  it("evicts nobody when the lists agree", () => {
    expect(planReconcile("kv", ["a", "b"], rec()).evicts).toEqual([]);
    expect(planReconcile("disk", ["a", "b"], rec()).evicts).toEqual([]);
  });
});
