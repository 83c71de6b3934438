import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createAccountTrust, createBrokerTrust, decodeJwt } from "../src/internal.js";
import { heldAccountJwt, isHeldJwt } from "../src/broker/node-hold.js";
import type { JszAccount } from "../src/broker/system-client.js";
import { clusterNodesStatus, nodeState, type NodeStateInput } from "../src/ops/cluster-status.js";
import { describeProblems, storedStreams, streamProblems, type TenantAccount } from "../src/ops/node-streams.js";
import { createTempRoot, type TempRoot } from "../src/testing/index.js";
import { D, rec, refusalOf } from "./fixtures/records.js";

// docs/cluster.md "Restarts" (issue #28): a node boots with every tenant held, and status judges
// each node's tenant streams from its JSZ against its store.

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const t1 = createAccountTrust(broker.operator, "t1", { kind: "space" });
const tenants: TenantAccount[] = [{ name: "t1", publicKey: t1.publicKey }];

describe("heldAccountJwt", () => {
  it("admits no connection (limits.conn 0) and keeps every other claim, the JetStream limits and revocations included", () => {
    const held = decodeJwt(heldAccountJwt(broker.operator, t1.jwt));
    const orig = decodeJwt(t1.jwt);
    expect((held.nats.limits as Record<string, unknown>).conn).toBe(0);
    expect(isHeldJwt(held)).toBe(true);
    expect(isHeldJwt(orig)).toBe(false);
    const { conn: _c, ...limits } = held.nats.limits as Record<string, unknown>;
    const { conn: _o, ...origLimits } = orig.nats.limits as Record<string, unknown>;
    expect(limits).toEqual(origLimits);
    const { limits: _l, ...rest } = held.nats;
    const { limits: _ol, ...origRest } = orig.nats;
    expect(rest).toEqual(origRest);
    expect([held.sub, held.iss, held.iat]).toEqual([orig.sub, orig.iss, orig.iat]);
    // Not a revocation: "Authorization Violation" twice in a row closes a default nats.js client for good.
    expect(held.nats.revocations).toBeUndefined();
  });

  it("is byte-stable (a node's boot config is compared by digest) and refuses another operator's account", () => {
    expect(heldAccountJwt(broker.operator, t1.jwt)).toBe(heldAccountJwt({ ...broker.operator }, `${t1.jwt}`));
    const other = createBrokerTrust({ retainSystemSigningSeed: false });
    expect(refusalOf(() => heldAccountJwt(other.operator, t1.jwt)).code).toBe("foreign-operator");
  });
});

const stream = (name: string, extra: Partial<NonNullable<JszAccount["stream_detail"]>[number]> = {}) => ({ name, config: { num_replicas: 1 }, cluster: { leader: "n1" }, stream_raft_group: `S-R1F-${name}`, ...extra });
const jsz = (...streams: ReturnType<typeof stream>[]) => new Map<string, JszAccount>([[t1.publicKey, { id: t1.publicKey, stream_detail: streams }]]);

describe("streamProblems", () => {
  it("none when every listed stream names its group and has a leader", () => {
    expect(streamProblems(jsz(stream("KV_a"), stream("ev")), tenants, true)).toEqual([]);
  });

  it("unassigned: listed without its group (recovered from disk outside the meta layer)", () => {
    const { stream_raft_group: _g, ...bare } = stream("KV_a");
    expect(streamProblems(jsz(bare as ReturnType<typeof stream>, stream("ev")), tenants, true)).toEqual([{ space: "t1", stream: "KV_a", problem: "unassigned" }]);
  });

  it("no leader: assigned, nobody leads it", () => {
    expect(streamProblems(jsz(stream("KV_a", { cluster: {} })), tenants, true)).toEqual([{ space: "t1", stream: "KV_a", problem: "no leader" }]);
  });

  it("not running: in the node's store, not in its JetStream", () => {
    const stored = new Map([[t1.publicKey, ["KV_a", "ev"]]]);
    expect(streamProblems(jsz(stream("ev")), tenants, true, stored)).toEqual([{ space: "t1", stream: "KV_a", problem: "not running" }]);
    expect(streamProblems(new Map(), tenants, true, stored).map((p) => p.stream)).toEqual(["KV_a", "ev"]);
  });

  it("before JSZ groups (2.9): only a replicated stream listing no peers reads as unassigned", () => {
    const r3 = (peers: unknown[]) => stream("KV_a", { config: { num_replicas: 3 }, cluster: { leader: "n1", replicas: peers }, stream_raft_group: undefined as unknown as string });
    expect(streamProblems(jsz(r3([])), tenants, false)).toEqual([{ space: "t1", stream: "KV_a", problem: "unassigned" }]);
    expect(streamProblems(jsz(r3([{}, {}])), tenants, false)).toEqual([]);
    const { stream_raft_group: _g, ...r1 } = stream("ev");
    expect(streamProblems(jsz(r1 as ReturnType<typeof stream>), tenants, false)).toEqual([]); // unknowable there
  });

  it("ignores accounts that are not the committed tenants", () => {
    expect(streamProblems(jsz(stream("x", { cluster: {} })), [{ name: "t2", publicKey: "AOTHER" }], true)).toEqual([]);
  });

  it("describeProblems names at most six", () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ space: "t1", stream: `s${i}`, problem: "unassigned" as const }));
    expect(describeProblems(many)).toBe("t1 s0 unassigned, t1 s1 unassigned, t1 s2 unassigned, t1 s3 unassigned, t1 s4 unassigned, t1 s5 unassigned and 2 more");
  });
});

describe("storedStreams", () => {
  const roots: TempRoot[] = [];
  afterEach(() => roots.splice(0).forEach((r) => r.remove()));
  it("reads <store>/jetstream/<account>/streams, skipping a deletion in progress", () => {
    const root = createTempRoot();
    roots.push(root);
    const dir = join(root.layout.nodeStoreDir("n1"), "jetstream", t1.publicKey, "streams");
    for (const s of ["KV_a", ".gone"]) mkdirSync(join(dir, s), { recursive: true });
    expect(storedStreams(root.layout, "n1", tenants)).toEqual(new Map([[t1.publicKey, ["KV_a"]]]));
    expect(storedStreams(root.layout, "n2", tenants)).toEqual(new Map());
  });
});

describe("a node's state with its streams checked", () => {
  const input = (extra: Partial<NodeStateInput> = {}): NodeStateInput => ({ running: true, record: rec({}), proof: { appliedGeneration: 7, configDigest: D("a") }, stillAdmits: [], onDiskDigest: D("a"), ...extra });

  it("STREAMS UNSERVED names the streams; a failed read is unknown, never clean; none is clean", () => {
    const problems = [{ space: "t1", stream: "KV_cotal_state_t1", problem: "unassigned" as const }];
    expect(nodeState(input({ streams: { problems } }))).toEqual({ state: "STREAMS UNSERVED", why: "tenant streams it hosts are not served (their writes get no reply): t1 KV_cotal_state_t1 unassigned" });
    expect(nodeState(input({ streams: { error: "timeout" } })).state).toBe("unknown");
    expect(nodeState(input({ streams: { problems: [] } })).state).toBe("clean");
    // A more dangerous state still wins.
    expect(nodeState(input({ streams: { problems }, stillAdmits: ["beta"], record: rec({ pending: null }) })).state).toBe("still admits");
  });

  it("clusterNodesStatus leaves a stopped node's streams unjudged (a running one is the live cells')", () => {
    const problems = [{ space: "t1", stream: "KV_cotal_state_t1", problem: "unassigned" as const }];
    const r = rec({ nodes: { n2: { appliedGeneration: 7, configDigest: D("a"), provenAt: "t" } } });
    const [stopped] = clusterNodesStatus([{ name: "n2", url: "nats://h:2", port: 2, clusterPort: 12 }], r, {}, {}, { streams: { n2: { problems } }, root: "/r" });
    expect([stopped?.state, stopped?.streams, stopped?.next]).toEqual(["stopped", undefined, undefined]);
  });
});
