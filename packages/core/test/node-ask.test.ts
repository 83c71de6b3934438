/** A writer's ask of the agents elsewhere (docs/cluster.md "The writer asks, the agent applies"): parsed strictly, standing only while its writer holds its lease. */
import { describe, expect, it } from "vitest";
import { GUARDS_ON } from "../src/guards.js";
import { ASK_KEY, askStands, nodeAsk, parseNodeAsk, readNodeAsk, writeNodeAsk } from "../src/inventory/node-ask.js";
import { agentProof, parseAgentProof, proofKey } from "../src/inventory/node-proofs.js";
import type { InventoryRecord, PendingMutation } from "../src/inventory/record.js";
import { askedGeneration, askedNodes } from "../src/saga/agent-ask.js";
import { hostname } from "node:os";
import type { NodeRuntime } from "../src/broker/runtime.js";
import { MemoryInventoryStore } from "../src/testing/index.js";

const ask = nodeAsk({ id: "a1", leaseId: "L1", generation: 5, claim: "sha256:staged", spaces: ["alpha"], nodes: ["n2", "n3"] }, new Date("2026-12-07T00:00:00Z"));
const bytes = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));

describe("a writer's ask", () => {
  it("round-trips through its key, and anything malformed asks nothing", async () => {
    const kv = new MemoryInventoryStore().materialKv();
    expect(await readNodeAsk(kv)).toBeUndefined();
    await writeNodeAsk(kv, ask);
    expect(await readNodeAsk(kv)).toEqual(ask);
    expect(parseNodeAsk(await kv.get(ASK_KEY))).toEqual(ask);
    for (const bad of [{ ...ask, format: "x" }, { ...ask, id: "" }, { ...ask, leaseId: 3 }, { ...ask, generation: 0 }, { ...ask, spaces: ["", "a"] }, { ...ask, nodes: "n2" }, { ...ask, claim: 5 }, { ...ask, at: undefined }, null, 7]) {
      expect(parseNodeAsk(bytes(bad)), JSON.stringify(bad)).toBeUndefined();
    }
    for (const bad of [{ ...ask, id: 5 }, { ...ask, id: undefined }, { ...ask, leaseId: "" }, { ...ask, at: 5 }, { ...ask, spaces: [5] }, { ...ask, nodes: [""] }, { ...ask, generation: 1.5 }]) {
      expect(parseNodeAsk(bytes(bad)), JSON.stringify(bad)).toBeUndefined();
    }
    // The first generation, and an ask of the committed list (no claim), are asks.
    const first = nodeAsk({ id: "a2", leaseId: "L2", generation: 1, spaces: [], nodes: ["n2"] });
    expect(parseNodeAsk(bytes(first))).toEqual(first);
    expect("claim" in first).toBe(false);
    expect(parseNodeAsk(new TextEncoder().encode("{"))).toBeUndefined();
    expect(parseNodeAsk(undefined)).toBeUndefined();
  });

  it("stands for a node it names while its writer's lease holds, and never once that lease is gone (red with NODE_ASK_UNFENCED)", () => {
    expect(askStands(ask, "n2", true)).toBe(true);
    expect(askStands(ask, "n1", true)).toBe(false); // applied by the writer itself
    expect(askStands(undefined, "n2", true)).toBe(false);
    expect(askStands(ask, "n2", false, GUARDS_ON)).toBe(false);
    expect(askStands(ask, "n2", false, { ...GUARDS_ON, NODE_ASK_UNFENCED: true })).toBe(true); // the ablation: a gone writer's ask obeyed
    expect(askStands(ask, "n1", false, { ...GUARDS_ON, NODE_ASK_UNFENCED: true })).toBe(false);
  });

  it("is of the claim when server.conf holds the claim's staged bytes, else of the committed generation (a rollback, up)", () => {
    const record = { generation: 4, spaces: ["alpha"], appliedGeneration: 4, configDigest: "sha256:c", pending: { generation: 5, stagedDigest: "sha256:staged" } as PendingMutation } as InventoryRecord;
    expect(askedGeneration(record, "sha256:staged")).toEqual({ generation: 5, claim: "sha256:staged" });
    expect(askedGeneration(record, "sha256:c")).toEqual({ generation: 4 });
    expect(askedGeneration({ ...record, pending: null }, "sha256:staged")).toEqual({ generation: 4 });
    expect(askedGeneration(undefined, "sha256:staged")).toEqual({ generation: 1 }); // a seed: no record yet
  });

  it("goes to the nodes whose client address is not this host's; loopback nodes are renamed here", () => {
    const node = (name: string, url: string): NodeRuntime => ({ name, url, port: 4222, clusterPort: 6222, configPath: "", logFile: "", owner: { pid: 1, host: hostname() } });
    const nodes = [node("n1", "nats://127.0.0.1:4222"), node("n2", "nats://10.255.254.2:4222"), node("n3", "nats://localhost:4222")];
    expect(askedNodes(nodes).map((n) => n.name)).toEqual(["n2"]);
    // Recorded by another host's cotal: asked, whatever its address (it is never signalled from here either).
    expect(askedNodes([{ ...node("n4", "nats://127.0.0.1:4222"), owner: { pid: 1, host: `${hostname()}-other` } }]).map((n) => n.name)).toEqual(["n4"]);
  });

  it("is named by the proof that answers it, which a parse keeps and a malformed one drops", () => {
    const proof = agentProof("n2", 5, { configDigest: "sha256:a", provenAt: "2026-12-07T00:00:00.000Z" }, "sha256:staged", "a1");
    expect(parseAgentProof(bytes(proof), "n2")).toEqual(proof);
    expect(parseAgentProof(bytes({ ...proof, ask: 1 }), "n2")).toBeUndefined();
    const plain = agentProof("n2", 4, { configDigest: "sha256:a", provenAt: "2026-12-07T00:00:00.000Z" });
    expect("ask" in plain || "claim" in plain).toBe(false);
    const answered = agentProof("n2", 4, { configDigest: "sha256:a", provenAt: "2026-12-07T00:00:00.000Z" }, undefined, "a2");
    expect(answered).toEqual({ ...plain, ask: "a2" });
    expect(parseAgentProof(bytes(answered), "n2")).toEqual(answered);
    expect(proofKey("n2")).toBe("node.n2");
  });
});
