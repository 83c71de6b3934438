/** The agents' proofs on keys of their own (docs/cluster.md "The agent's proof on its own key"): parsed strictly, laid over the record only where they prove more. */
import { describe, expect, it } from "vitest";
import { agentProof, parseAgentProof, proofKey, readAgentProofs, withAgentProofs, writeAgentProof } from "../src/inventory/node-proofs.js";
import type { InventoryRecord, PendingMutation } from "../src/inventory/record.js";
import { MemoryInventoryStore } from "../src/testing/index.js";

const p = { configDigest: "sha256:a", provenAt: "2026-12-07T00:00:00.000Z" };
const base: InventoryRecord = {
  generation: 4,
  spaces: ["alpha", "beta"],
  appliedGeneration: 4,
  configDigest: "sha256:root",
  pending: null,
  members: ["n1", "n2", "n3"],
  nodes: { n1: { ...p, appliedGeneration: 4 }, n2: { ...p, appliedGeneration: 4 }, n3: { ...p, appliedGeneration: 3 } },
};
const claim = { op: "rm", generation: 5, adds: [], removes: ["beta"], stagedDigest: "sha256:staged" } as unknown as PendingMutation;

describe("an agent's proof laid over the record", () => {
  it("counts a member behind at the committed generation, and a claim's partial proof only for that claim", () => {
    const merged = withAgentProofs(base, [agentProof("n3", 4, { ...p, serverConfigDigest: "sha256:s" })]);
    expect(merged.nodes?.n3).toEqual({ ...p, serverConfigDigest: "sha256:s", appliedGeneration: 4 });
    expect(merged.nodes?.n1).toBe(base.nodes?.n1);
    const pending = { ...base, pending: claim };
    const partial = withAgentProofs(pending, [agentProof("n3", 5, p, "sha256:staged")]);
    expect(partial.pending?.proven?.n3).toEqual({ ...p, appliedGeneration: 5 });
    expect(partial.nodes).toEqual(base.nodes);
  });

  it("changes nothing for an older generation, another claim, a node that is no member, or a node already ahead", () => {
    const pending = { ...base, pending: claim };
    for (const proof of [agentProof("n3", 3, p), agentProof("n3", 5, p, "sha256:other"), agentProof("n3", 4, p, "sha256:staged"), agentProof("n9", 4, p)]) {
      expect(withAgentProofs(pending, [proof]), JSON.stringify(proof)).toEqual(pending);
    }
    const ahead = { ...base, nodes: { ...base.nodes, n3: { ...p, appliedGeneration: 4, configDigest: "sha256:writer" } } };
    expect(withAgentProofs(ahead, [agentProof("n3", 4, p)])).toEqual(ahead); // the writer's own proof stays
    expect(withAgentProofs({ ...base, pending: claim }, [agentProof("n3", 5, p)])).toEqual({ ...base, pending: claim }); // a claim's generation needs the claim's digest
    // The writer's partial proof of the claim stays; another node's partial proof beside it is added.
    const proven = { ...base, pending: { ...claim, proven: { n1: { ...p, configDigest: "sha256:writer", appliedGeneration: 5 } } } };
    expect(withAgentProofs(proven, [agentProof("n1", 5, p, "sha256:staged")])).toEqual(proven);
    expect(withAgentProofs(proven, [agentProof("n3", 5, p, "sha256:staged")]).pending?.proven).toEqual({ ...proven.pending.proven, n3: { ...p, appliedGeneration: 5 } });
  });

  it("a single broker's record (no members) is left as it is; a cluster record with no proofs yet takes one", () => {
    const single = { ...base, members: undefined, nodes: undefined };
    expect(withAgentProofs(single, [agentProof("n3", 4, p)])).toEqual(single);
    expect(withAgentProofs({ ...base, nodes: undefined }, [agentProof("n3", 4, p)]).nodes).toEqual({ n3: { ...p, appliedGeneration: 4 } });
  });
});

describe("a stored proof", () => {
  it("round-trips through its node's key; anything malformed, or another node's, proves nothing", async () => {
    const store = new MemoryInventoryStore();
    const kv = store.proofsKv();
    await writeAgentProof(kv, agentProof("n2", 4, p));
    expect([...store.proofs.keys()]).toEqual([proofKey("n2")]);
    expect(await readAgentProofs(kv, ["n1", "n2", "n3"])).toEqual([agentProof("n2", 4, p)]);
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    const good = agentProof("n2", 4, p);
    expect(Object.keys(good)).not.toContain("claim");
    const claimed = agentProof("n2", 5, { ...p, serverConfigDigest: "sha256:s" }, "sha256:staged");
    expect(parseAgentProof(enc(claimed), "n2")).toEqual(claimed);
    for (const bad of [enc({ ...good, node: "n1" }), enc({ ...good, format: "x" }), enc({ ...good, generation: 0 }), enc({ ...good, generation: "4" }), enc({ ...good, configDigest: 1 }), enc({ ...good, provenAt: 1 }), enc({ ...good, claim: 7 }), enc({ ...good, serverConfigDigest: 7 }), enc(null), enc(7), new TextEncoder().encode("{")]) {
      expect(parseAgentProof(bad, "n2")).toBeUndefined();
    }
    expect(parseAgentProof(undefined, "n2")).toBeUndefined();
  });
});
