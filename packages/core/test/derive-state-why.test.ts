import { describe, expect, it } from "vitest";
import { deriveState } from "../src/internal.js";

// `cotal status` prints the state and its `why`; the why is what the operator acts on.
import { D, stateInput as input, stateRec as rec } from "./fixtures/records.js";
const pending = { generation: 4, op: "add" as const, adds: ["c"], removes: [], writer: "9@h (space add)", leaseId: "L", claimedAt: "t" };

describe("deriveState: state and why", () => {
  it.each([
    ["no root", input({ exists: false }), "absent", "no root here"],
    ["corrupt records", input({ corrupt: 2 }), "uncertain", "2 unreadable record(s): the tenant count is unknown"],
    ["a proven claim", input({ record: rec({ appliedGeneration: 4, pending }) }), "PROVEN-BUT-UNCOMMITTED", "generation 4 was proven but not committed; the next writer commits it"],
    ["promoted bytes", input({ record: rec({ pending: { ...pending, stagedDigest: D("b") } }), serverConfDigest: D("b") }), "PROMOTED-BUT-UNCOMMITTED", "server.conf holds generation 4's bytes, never proven; the next writer completes forward"],
    ["staged, not promoted", input({ record: rec({ pending: { ...pending, stagedDigest: D("b") } }) }), "PENDING", "a add claimed generation 4 (9@h (space add)) and has not promoted; the next writer rolls it back"],
    ["claimed, nothing staged", input({ record: rec({ pending }) }), "PENDING", "a add claimed generation 4 (9@h (space add)) and has not promoted; the next writer rolls it back"],
    ["claimed, server.conf missing", input({ record: rec({ pending }), serverConfDigest: undefined }), "UNRESUMABLE", `server.conf (missing) is neither the committed config (${D("a")}) and nothing was staged; every writer refuses: cotal broker reconcile`],
    ["staged, server.conf foreign", input({ record: rec({ pending: { ...pending, stagedDigest: D("b") } }), serverConfDigest: D("c") }), "UNRESUMABLE", `server.conf (${D("c")}) is neither the committed config (${D("a")}) nor the staged one (${D("b")}); every writer refuses: cotal broker reconcile`],
    ["commit ahead of proof", input({ record: rec({ appliedGeneration: 2 }) }), "UNPROVEN RELOAD", "generation 3 committed, 2 proven; every writer refuses: cotal broker reconcile"],
    ["evicted tenants", input({ preloadedNames: [] }), "SILENT EVICTION", "not preloaded by the running config: a, b"],
    ["evicted tenants without a record", input({ record: undefined, preloadedNames: ["a"] }), "SILENT EVICTION", "not preloaded by the running config: b"],
    ["unvouched preloads", input({ unknownPreloads: 3 }), "RESURRECTION RISK", "3 preloaded account(s) that no record vouches for"],
    ["disk and KV disagree", input({ diskNames: ["a", "x", "y"], preloadedNames: ["a", "x", "y"], record: rec({ spaces: ["a", "b", "c"] }) }), "divergence", "disk-only: [x, y], kv-only: [b, c]"],
    ["server.conf changed", input({ serverConfDigest: D("c") }), "UNPROVEN RELOAD", "server.conf is not the config proven at the applied generation"],
    ["stopped", input({ running: false }), "stopped", "the broker is not running"],
    ["clean", input(), "clean", "generation 3, proven and committed"],
    ["clean without a record", input({ record: undefined }), "clean", "the running config preloads every tenant on disk"],
    ["a stopped broker", input({ unreachable: "pid 7 is stopped" }), "UNREACHABLE", "pid 7 is stopped"],
    ["a stopped broker is not running", input({ running: false, unreachable: "pid 7 is stopped" }), "stopped", "the broker is not running"],
    ["a standing removal", input({ blocked: "a removal of space b is unfinished", diskNames: ["a", "b", "x"] }), "BLOCKED", "a removal of space b is unfinished"],
    ["blocked while stopped", input({ running: false, blocked: "a cut holds the store" }), "BLOCKED", "a cut holds the store"],
    ["a torn claim before a block", input({ record: rec({ pending }), blocked: "x" }), "PENDING", "a add claimed generation 4 (9@h (space add)) and has not promoted; the next writer rolls it back"],
    ["unproven before a block", input({ record: rec({ appliedGeneration: 2 }), blocked: "x" }), "UNPROVEN RELOAD", "generation 3 committed, 2 proven; every writer refuses: cotal broker reconcile"],
    ["one node behind", input({ degradedNodes: ["n2: streams unassigned"] }), "DEGRADED", "node n2: streams unassigned"],
    ["two nodes behind", input({ degradedNodes: ["n2: x", "n3: y"] }), "DEGRADED", "nodes n2: x, n3: y"],
    ["no node behind", input({ degradedNodes: [] }), "clean", "generation 3, proven and committed"],
    ["nodes of a stopped cluster", input({ running: false, degradedNodes: ["n2: x"] }), "stopped", "the broker is not running"],
    ["divergence before degraded nodes", input({ diskNames: ["a", "x", "y"], preloadedNames: ["a", "x", "y"], record: rec({ spaces: ["a", "b", "c"] }), degradedNodes: ["n2: x"] }), "divergence", "disk-only: [x, y], kv-only: [b, c]"],
  ] as const)("%s", (_what, i, state, why) => {
    expect(deriveState(i)).toEqual({ state, why });
  });

  it("a stopped broker is not judged on preloads or on server.conf", () => {
    expect(deriveState(input({ running: false, preloadedNames: [], unknownPreloads: 2, serverConfDigest: D("c") })).state).toBe("stopped");
    expect(deriveState(input({ running: false, serverConfDigest: undefined })).state).toBe("stopped");
    expect(deriveState(input({ running: false, record: undefined, preloadedNames: [] })).state).toBe("stopped");
  });

  it("a record with no proven config yet is not an unproven reload", () => {
    expect(deriveState(input({ record: rec({ configDigest: null }), serverConfDigest: D("c") })).state).toBe("clean");
  });

  it("without a record, disk names are not compared with anything", () => {
    expect(deriveState(input({ record: undefined, diskNames: ["a", "b", "x"], preloadedNames: ["a", "b", "x"] })).state).toBe("clean");
  });

  it("only disk tenants the record lists can be silently evicted", () => {
    // "b" is in the record but has no disk record: that is divergence, not eviction
    expect(deriveState(input({ diskNames: ["a"], preloadedNames: ["a"] })).state).toBe("divergence");
  });
});
