import { describe, expect, it } from "vitest";
import { chooseNode, NODE_ANSWER_MS, rankNodes, reachNodes, type NodeProbe, type NodeReach } from "../src/verb/reach.js";
import { nodeState, type NodeStateInput } from "../src/ops/cluster-status.js";
import { reachedFirst } from "../src/ops/status.js";
import { GUARDS_ON } from "../src/guards.js";
import { D, rec } from "./fixtures/records.js";

// docs/cluster.md "Verbs through any node": which node a verb goes through (pure, through the probe seam).

const node = (i: number) => ({ name: `c-n${i}`, url: `nats://127.0.0.1:1400${i}` });
const r = (i: number, reachable: boolean, jetstream: boolean | null): NodeReach => ({ ...node(i), reachable, jetstream, ms: 1, ...(reachable && jetstream ? {} : { why: "x" }) });
const FIRST_ONLY = { ...GUARDS_ON, VERBS_FIRST_NODE_ONLY: true };

describe("rankNodes / chooseNode", () => {
  it("all up: node 1, then the others in order", () => {
    const all = [r(1, true, true), r(2, true, true), r(3, true, true)];
    expect(rankNodes(all, GUARDS_ON).map((n) => n.name)).toEqual(["c-n1", "c-n2", "c-n3"]);
    expect(chooseNode(all, GUARDS_ON)?.name).toBe("c-n1");
  });

  it("node 1 down: node 2, and node 1 last", () => {
    const reach = [r(1, false, null), r(2, true, true), r(3, true, true)];
    expect(rankNodes(reach, GUARDS_ON).map((n) => n.name)).toEqual(["c-n2", "c-n3", "c-n1"]);
    expect(chooseNode(reach, GUARDS_ON)?.name).toBe("c-n2");
  });

  it("node 1 answers but its JetStream cannot read the record (a minority): a majority node first", () => {
    const reach = [r(1, true, false), r(2, true, true), r(3, false, null)];
    expect(rankNodes(reach, GUARDS_ON).map((n) => n.name)).toEqual(["c-n2", "c-n1", "c-n3"]);
    expect(chooseNode(reach, GUARDS_ON)?.name).toBe("c-n2");
  });

  it("no JetStream anywhere: the first node that answered (the connect then refuses inventory-unreachable)", () => {
    expect(chooseNode([r(1, false, null), r(2, true, false), r(3, true, false)], GUARDS_ON)?.name).toBe("c-n2");
  });

  it("nothing answered: none", () => {
    expect(chooseNode([r(1, false, null), r(2, false, null)], GUARDS_ON)).toBeUndefined();
    expect(chooseNode([], GUARDS_ON)).toBeUndefined();
  });

  it("VERBS_FIRST_NODE_ONLY: node 1 first whatever answered, and none chosen when it did not", () => {
    const reach = [r(1, false, null), r(2, true, true), r(3, true, true)];
    expect(rankNodes(reach, FIRST_ONLY).map((n) => n.name)).toEqual(["c-n1", "c-n2", "c-n3"]);
    expect(chooseNode(reach, FIRST_ONLY)).toBeUndefined();
  });
});

describe("reachNodes", () => {
  it("asks every node at once and keeps the nodes' order, with why not", async () => {
    const probe: NodeProbe = async (url) => {
      if (url.endsWith("14001")) throw new Error("connection refused");
      if (url.endsWith("14003")) return { jetstream: false, why: "its JetStream refused the record: JetStream system temporarily unavailable" };
      return { jetstream: true };
    };
    const reach = await reachNodes([node(1), node(2), node(3)], probe, 500);
    expect(reach.map((n) => [n.name, n.reachable, n.jetstream])).toEqual([
      ["c-n1", false, null],
      ["c-n2", true, true],
      ["c-n3", true, false],
    ]);
    expect(reach[0]?.why).toBe("connection refused");
    expect(reach[2]?.why).toContain("temporarily unavailable");
  });

  it("a node that never answers is unreachable within the bound, and does not hold up the others", async () => {
    const t0 = Date.now();
    const reach = await reachNodes([node(1), node(2)], (url) => (url.endsWith("14001") ? new Promise(() => undefined) : Promise.resolve({ jetstream: true })), 300);
    const took = Date.now() - t0;
    expect(reach.map((n) => n.reachable)).toEqual([false, true]);
    expect(reach[0]?.why).toBe("no answer within 300 ms");
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(300 + 1_000);
  });

  it("the bound is one documented constant, a few seconds", () => {
    expect(NODE_ANSWER_MS).toBe(3_000);
  });
});

describe("nodeState: a running node this host cannot reach", () => {
  const input = (extra: Partial<NodeStateInput>): NodeStateInput => ({ running: true, record: rec({ generation: 7, appliedGeneration: 7 }), proof: { appliedGeneration: 7, configDigest: D("a") }, stillAdmits: [], onDiskDigest: D("a"), ...extra });
  it("UNREACHABLE with why; reached is clean; a stopped one stays stopped", () => {
    expect(nodeState(input({ reach: { reachable: false, why: "no answer within 3000 ms" } }))).toEqual({ state: "UNREACHABLE", why: "its process runs, but it did not answer this host: no answer within 3000 ms" });
    expect(nodeState(input({ reach: { reachable: true } })).state).toBe("clean");
    expect(nodeState(input({ running: false, reach: { reachable: false } })).state).toBe("stopped");
  });
});

describe("reachedFirst (space list/info's read order)", () => {
  it("the node status went through first, unreachable nodes last", () => {
    const nodes = [
      { url: node(1).url, name: "c-n1", reachable: false },
      { url: node(2).url, name: "c-n2", reachable: true },
      { url: node(3).url, name: "c-n3", reachable: true },
    ];
    const s = { broker: { running: true, staleRuntime: false, strays: [], nodes, through: "c-n3" } } as unknown as Parameters<typeof reachedFirst>[0];
    expect(reachedFirst(s, [node(1).url, node(2).url, node(3).url])).toEqual([node(3).url, node(2).url, node(1).url]);
  });
});
