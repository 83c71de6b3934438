import { describe, expect, it } from "vitest";
import type { InventoryRecord, PendingMutation } from "../src/inventory/record.js";
import { allowedIsClaimList, nodeAllowedSpaces, nodeNeedsApply, withNodeProof, type NodeObservation } from "../src/saga/node-decision.js";

// The pure decisions of `cotal node run` (docs/cluster.md "cotal node").

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const T0 = Date.parse("2026-12-01T10:00:00.000Z");

function record(over: Partial<InventoryRecord> = {}): InventoryRecord {
  return {
    generation: 3,
    spaces: ["alpha", "beta", "default"],
    appliedGeneration: 3,
    configDigest: D1,
    pending: null,
    members: ["n1", "n2", "n3"],
    nodes: { n3: { appliedGeneration: 3, configDigest: D1, provenAt: new Date(T0 + 1_000).toISOString() } },
    ...over,
  };
}

function claim(over: Partial<PendingMutation>): PendingMutation {
  return { generation: 4, op: "remove", adds: [], removes: [], writer: "1@h (space rm)", leaseId: "L", claimedAt: new Date(T0).toISOString(), ...over };
}

const seen = (over: Partial<NodeObservation> = {}): NodeObservation => ({ running: true, serverKey: "100:5", serverSeenAt: T0, diskDigest: D1, ...over });

describe("nodeAllowedSpaces: what a node may run", () => {
  it("the committed list when nothing is pending", () => {
    expect(nodeAllowedSpaces(record())).toEqual(["alpha", "beta", "default"]);
  });
  it("without a pending claim's removes (never re-admitted while the removal is in flight)", () => {
    expect(nodeAllowedSpaces(record({ pending: claim({ removes: ["beta"] }) }))).toEqual(["alpha", "default"]);
  });
  it("without a pending claim's adds (not committed yet)", () => {
    expect(nodeAllowedSpaces(record({ pending: claim({ op: "batch", adds: ["gamma"], removes: ["alpha"] }) }))).toEqual(["beta", "default"]);
  });
});

describe("allowedIsClaimList: may the agent's apply count as the claim's partial proof", () => {
  it("yes for a pure removal: the allowed list is what the claim commits", () => {
    expect(allowedIsClaimList(record({ pending: claim({ removes: ["beta"] }) }))).toBe(true);
  });
  it("no when the claim also adds (the node runs a list no generation names)", () => {
    expect(allowedIsClaimList(record({ pending: claim({ op: "batch", adds: ["gamma"], removes: ["beta"] }) }))).toBe(false);
  });
  it("no for a limits claim (it re-signs an account) and with nothing pending", () => {
    expect(allowedIsClaimList(record({ pending: claim({ op: "limits", limits: { space: "beta", from: "a", to: "b" } }) }))).toBe(false);
    expect(allowedIsClaimList(record())).toBe(false);
  });
});

describe("nodeNeedsApply", () => {
  it("no: the bytes on disk are the committed list and the record proved them after this server was first seen", () => {
    expect(nodeNeedsApply(record(), "n3", D1, seen())).toEqual({ apply: false, why: "proven at generation 3" });
  });
  it("yes: the server is not running", () => {
    expect(nodeNeedsApply(record(), "n3", D1, seen({ running: false })).apply).toBe(true);
  });
  it("yes: the config on disk is another list (e.g. the maintenance config a returning node boots with)", () => {
    const d = nodeNeedsApply(record(), "n3", D1, seen({ diskDigest: D2 }));
    expect(d).toEqual({ apply: true, why: "its config is not generation 3's list" });
  });
  it("yes: the node's proof is behind the committed generation (left behind by an add)", () => {
    const rec = record({ nodes: { n3: { appliedGeneration: 2, configDigest: D2, provenAt: new Date(T0 + 1_000).toISOString() } } });
    expect(nodeNeedsApply(rec, "n3", D1, seen()).why).toMatch(/proof \(generation 2\) is behind the committed generation 3/);
    expect(nodeNeedsApply(record({ nodes: {} }), "n3", D1, seen()).why).toMatch(/proof \(generation none\)/);
  });
  it("yes: the record's proof predates this server (it restarted since), though the bytes match", () => {
    expect(nodeNeedsApply(record(), "n3", D1, seen({ serverSeenAt: T0 + 5_000 })).apply).toBe(true);
  });
  it("yes: the server restarted since this agent's own proof", () => {
    const d = nodeNeedsApply(record({ nodes: {} }), "n3", D1, seen({ serverKey: "200:9", serverSeenAt: T0 + 5_000, applied: { serverKey: "100:5", digest: D1 } }));
    expect(d).toEqual({ apply: true, why: "its server restarted since its last proof" });
  });
  it("no: this agent itself proved these bytes on this very server (also with a claim pending, where the record holds no proof of them)", () => {
    const rec = record({ pending: claim({ op: "batch", adds: ["gamma"], removes: ["beta"] }), nodes: {} });
    expect(nodeNeedsApply(rec, "n3", D2, seen({ diskDigest: D2, applied: { serverKey: "100:5", digest: D2 } }))).toEqual({ apply: false, why: "proven by this agent" });
  });
  it("with a claim pending, the record's proof of the committed list does not count: the node must drop the removed tenant", () => {
    const rec = record({ pending: claim({ removes: ["beta"] }) });
    expect(nodeNeedsApply(rec, "n3", D2, seen()).why).toMatch(/not the committed list without the pending claim's removes \(generation 4\)/);
    expect(nodeNeedsApply(rec, "n3", D1, seen()).apply).toBe(true);
  });
});

describe("withNodeProof", () => {
  it("stamps only this node's entry with the committed generation, keeping the others", () => {
    const rec = record({ generation: 5, nodes: { n1: { appliedGeneration: 5, configDigest: D1, provenAt: "x" }, n3: { appliedGeneration: 3, configDigest: D2, provenAt: "y" } } });
    const out = withNodeProof(rec, "n3", { configDigest: D1, provenAt: "z" });
    expect(out.nodes).toEqual({ n1: { appliedGeneration: 5, configDigest: D1, provenAt: "x" }, n3: { appliedGeneration: 5, configDigest: D1, provenAt: "z" } });
    expect({ ...out, nodes: rec.nodes }).toEqual(rec);
  });
});
