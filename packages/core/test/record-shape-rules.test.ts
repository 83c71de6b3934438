import { describe, expect, it } from "vitest";
import { claimedSpaces, listedOrClaimed, nextSpacesOf, parseInventoryRecord, type InventoryRecord, type PendingMutation } from "../src/inventory/record.js";

// The rules the claim-delta and cluster fields added to the record (docs/saga.md "The claim",
// docs/cluster.md): each refusal by its reason, each derivation against its plain definition.
const D = (c: string) => `sha256:${c.repeat(64)}`;
const ok: InventoryRecord = { generation: 3, spaces: ["a", "b"], appliedGeneration: 3, configDigest: D("a"), pending: null };
const claim: PendingMutation = { generation: 4, op: "add", adds: ["c"], removes: [], writer: "1@h (space add)", leaseId: "L", claimedAt: "2026-01-01T00:00:00.000Z" };
const parse = (v: unknown) => parseInventoryRecord(JSON.stringify(v));
const node = { appliedGeneration: 3, configDigest: D("b"), provenAt: "2026-01-01T00:00:00.000Z" };

/** The definition claimedSpaces must agree with, written the slow way. */
const plain = (spaces: string[], adds: string[], removes: string[]) => [...new Set([...spaces.filter((s) => !removes.includes(s)), ...adds])].sort();

describe("cluster fields on the record", () => {
  it.each([
    ["members that is not a list", { members: "n1" }, "members is not a list of distinct node names"],
    ["a member that is not a string", { members: ["n1", 2] }, "members is not a list of distinct node names"],
    ["an empty member name", { members: ["n1", ""] }, "members is not a list of distinct node names"],
    ["a repeated member", { members: ["n1", "n1"] }, "members is not a list of distinct node names"],
    ["nodes that is a list", { nodes: [node] }, "nodes is not an object"],
    ["nodes that is null", { nodes: null }, "nodes is not an object"],
    ["nodes that is a string", { nodes: "n1" }, "nodes is not an object"],
    ["a node that is null", { nodes: { n1: null } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node that is a number", { nodes: { n1: 5 } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node without its generation", { nodes: { n1: { ...node, appliedGeneration: 1.5 } } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node with a numeric digest", { nodes: { n1: { ...node, configDigest: 7 } } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node with a malformed digest", { nodes: { n1: { ...node, configDigest: "sha256:zz" } } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node without provenAt", { nodes: { n1: { ...node, provenAt: 1 } } }, "nodes.n1 is not {appliedGeneration, configDigest, provenAt}"],
    ["a node's server digest that is not a string", { nodes: { n1: { ...node, serverConfigDigest: 1 } } }, "nodes.n1.serverConfigDigest is not a string"],
  ])("refuses %s", (_what, patch, reason) => {
    expect(parse({ ...ok, ...patch })).toBe(reason);
  });

  it("accepts well-formed members and nodes, and a record with neither", () => {
    expect(parse({ ...ok, members: ["n1", "n2"], nodes: { n1: node, n2: { ...node, serverConfigDigest: D("c") } } })).toEqual({ ...ok, members: ["n1", "n2"], nodes: { n1: node, n2: { ...node, serverConfigDigest: D("c") } } });
    expect(parse(ok)).toEqual(ok);
  });
});

describe("claimedSpaces: the one rule for the list a claim commits", () => {
  it.each([
    ["an add into the middle", ["a", "c", "e"], ["b", "d"], []],
    ["adds before and after every name", ["m"], ["a", "z"], []],
    ["adds only, onto nothing", [], ["b", "a"], []],
    ["a remove and an add", ["a", "b", "c"], ["d"], ["b"]],
    ["removes only", ["a", "b", "c"], [], ["a", "c"]],
    ["an unsorted committed list", ["c", "a", "b"], ["d"], []],
    ["unsorted adds", ["b"], ["c", "a"], []],
    ["a name listed and added (an unparsed record)", ["a", "b"], ["b", "c"], []],
    ["everything removed", ["a"], [], ["a"]],
  ])("%s", (_what, spaces, adds, removes) => {
    const got = claimedSpaces(spaces, { adds, removes });
    expect(got).toEqual(plain(spaces, adds, removes));
    expect(new Set(got).size).toBe(got.length);
  });

  it("leaves its inputs untouched", () => {
    const spaces = ["c", "a"];
    const adds = ["d", "b"];
    claimedSpaces(spaces, { adds, removes: ["a"] });
    expect([spaces, adds]).toEqual([["c", "a"], ["d", "b"]]);
  });

  it("nextSpacesOf is the claim's list while one is pending, a copy of the committed list otherwise", () => {
    expect(nextSpacesOf({ spaces: ["a", "b"], pending: { ...claim, adds: ["c"], removes: ["a"] } })).toEqual(["b", "c"]);
    const committed = ["a", "b"];
    const next = nextSpacesOf({ spaces: committed, pending: null });
    expect(next).toEqual(["a", "b"]);
    next.push("z");
    expect(committed).toEqual(["a", "b"]);
  });

  it("listedOrClaimed holds the committed names and the claim's adds, not its removes' absence", () => {
    expect([...listedOrClaimed({ spaces: ["a", "b"], pending: { ...claim, adds: ["c"], removes: ["a"] } })].sort()).toEqual(["a", "b", "c"]);
    expect([...listedOrClaimed({ spaces: ["a"], pending: null })]).toEqual(["a"]);
  });
});

describe("pending.limits", () => {
  const limits = { space: "a", from: "JWT0", to: "JWT1" };
  const lim = (l: unknown, over: Record<string, unknown> = {}) => parse({ ...ok, pending: { ...claim, op: "limits", adds: [], limits: l, ...over } });
  it.each([
    ["null", null],
    ["a string", "a"],
    ["a missing space", { from: "x", to: "y" }],
    ["a numeric from", { space: "a", from: 1, to: "y" }],
    ["a missing to", { space: "a", from: "x" }],
  ])("refuses limits that are %s", (_what, l) => {
    expect(lim(l)).toBe("pending.limits is malformed");
  });

  it("refuses limits of a space outside the list, or beside adds or removes", () => {
    expect(lim({ ...limits, space: "zz" })).toBe("pending.limits names a space outside an unchanged list");
    expect(lim(limits, { adds: ["c"] })).toBe("pending.limits names a space outside an unchanged list");
    expect(lim(limits, { removes: ["b"] })).toBe("pending.limits names a space outside an unchanged list");
    expect(typeof lim(limits)).toBe("object");
  });
});

describe("serverConfigDigest", () => {
  it.each([
    ["null", null],
    ["a string", D("c")],
    ["a numeric digest", { digest: 1, forConfigDigest: D("a") }],
    ["a malformed digest", { digest: "sha256:x", forConfigDigest: D("a") }],
    ["a missing forConfigDigest", { digest: D("c") }],
    ["a malformed forConfigDigest", { digest: D("c"), forConfigDigest: "x" }],
  ])("refuses %s", (_what, d) => {
    expect(parse({ ...ok, serverConfigDigest: d })).toBe("serverConfigDigest is not {digest, forConfigDigest} of sha256:<hex>");
  });
});
