import { afterEach, describe, expect, it } from "vitest";
import { createAccountTrust, createBrokerTrust, preloadedAccounts, serverConfig, type RenderAccount, type RenderOptions } from "../src/internal.js";
import { renderNode } from "../src/broker/render-root.js";
import { heldAccountJwt } from "../src/broker/node-hold.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { metaFormed } from "../src/broker/cluster-process.js";
import { parseInventoryRecord, type InventoryRecord } from "../src/inventory/record.js";
import { clusterNodesStatus } from "../src/ops/cluster-status.js";
import { clusterOf, newClusterSettings, routesFor, tenantReplicasOf } from "../src/root/cluster-settings.js";
import { assertTemplateReplicas, spaceTemplate } from "../src/provision/template.js";
import { RootLayout } from "../src/root/layout.js";
import { loadSpaceAccount } from "../src/root/account-store.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import { assertMembersProven } from "../src/saga/finish.js";
import { runMutation } from "../src/saga/mutation.js";
import type { ReloadVerdict } from "../src/saga/reload.js";
import type { Reloader, ReloaderOptions } from "../src/saga/reloader.js";
import { renderList } from "../src/saga/render-list.js";
import { mayLeaveNodesBehind, nodesNotProven, recordPartialProofs } from "../src/saga/partial-proofs.js";
import { CotalError } from "../src/errors.js";
import { summarise } from "../src/provision/evict-cluster.js";
import type { EvictionResult } from "../src/broker/evict-connections.js";
import { createTempRoot, FakeReloader, memorySaga, type MemorySaga } from "../src/testing/index.js";
import { D, refusalOf } from "./fixtures/records.js";
import { add, record, remove } from "./saga-memory-helpers.js";
import { GUARDS_ON } from "../src/guards.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: false });
const authority = createAccountTrust(broker.operator, "authority", { kind: "authority" });
const alpha = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const beta = createAccountTrust(broker.operator, "beta", { kind: "space" });
const space = (a: RenderAccount): RenderAccount => ({ name: a.name, publicKey: a.publicKey, jwt: a.jwt });
const opts: RenderOptions = { host: "127.0.0.1", port: 4222, serverName: "c-n1", storeDir: "/r/nodes/c-n1/store", authority };
const block = { name: "c", port: 6222, routes: ["nats-route://127.0.0.1:6224", "nats-route://127.0.0.1:6223"] };

describe("a cluster node's config", () => {
  it("renders the cluster block after jetstream, routes sorted, line for line", () => {
    const text = serverConfig(broker, [space(alpha)], { ...opts, cluster: block });
    const lines = text.split("\n");
    const at = lines.indexOf("cluster {");
    expect(lines.slice(1, 3)).toEqual(['server_name: "c-n1"', 'listen: "127.0.0.1:4222"']);
    expect(lines.slice(at - 3, at + 8)).toEqual([
      "jetstream {",
      '  store_dir: "/r/nodes/c-n1/store"',
      "}",
      "cluster {",
      '  name: "c"',
      '  listen: "127.0.0.1:6222"',
      "  routes: [",
      '    "nats-route://127.0.0.1:6223"',
      '    "nats-route://127.0.0.1:6224"',
      "  ]",
      "}",
    ]);
    expect(lines[at + 8]).toMatch(/^operator: "/);
  });

  it("is byte-stable whatever the order of routes and spaces", () => {
    const a = serverConfig(broker, [space(beta), space(alpha)], { ...opts, cluster: block });
    const b = serverConfig(broker, [space(alpha), space(beta)], { ...opts, cluster: { ...block, routes: [...block.routes].reverse() } });
    expect(a).toBe(b);
  });

  it("leaves a single broker's config without a cluster block", () => {
    expect(serverConfig(broker, [space(alpha)], opts)).not.toMatch(/^cluster \{/m);
  });

  it("refuses a node with no route, a repeated route or a bad port", () => {
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, routes: [] } })).code).toBe("render-refused");
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, routes: ["nats-route://h:1", "nats-route://h:1"] } })).code).toBe("render-refused");
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, port: 70000 } })).code).toBe("render-refused");
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, name: "c\nrouter: x" } })).code).toBe("render-refused");
  });
});

describe("cluster settings and node paths", () => {
  const layout = new RootLayout("/r");

  it("names node i <serverName>-n<i>, R3 on three or more nodes", () => {
    const c = newClusterSettings("cotal-ab", [4222, 5001, 5002], [6001, 6002, 6003]);
    expect(c).toEqual({ name: "cotal-ab", replicas: 3, nodes: [{ name: "cotal-ab-n1", port: 4222, clusterPort: 6001 }, { name: "cotal-ab-n2", port: 5001, clusterPort: 6002 }, { name: "cotal-ab-n3", port: 5002, clusterPort: 6003 }] });
    expect(routesFor(c, "127.0.0.1", "cotal-ab-n2")).toEqual(["nats-route://127.0.0.1:6001", "nats-route://127.0.0.1:6003"]);
  });

  it("a test-only testRoutePort: the others dial it and the node advertises it; absent, nothing changes", () => {
    const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6]);
    const fwd = { ...c, nodes: c.nodes.map((n, i) => ({ ...n, testRoutePort: 7 + i })) };
    expect(clusterOf(layout, { cluster: fwd })).toEqual(fwd);
    expect(routesFor(fwd, "127.0.0.1", "c-n2")).toEqual(["nats-route://127.0.0.1:7", "nats-route://127.0.0.1:9"]);
    for (const testRoutePort of [4, 7, 0]) {
      const bad = { ...fwd, nodes: [...fwd.nodes.slice(0, 2), { ...fwd.nodes[2], testRoutePort }] };
      expect(refusalOf(() => clusterOf(layout, { cluster: bad })).code).toBe("corrupt-record");
    }
    const lines = serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, advertisePort: 7001 } }).split("\n");
    expect(lines.slice(lines.indexOf("cluster {") + 2, lines.indexOf("cluster {") + 4)).toEqual(['  listen: "127.0.0.1:6222"', '  advertise: "127.0.0.1:7001"']);
    expect(serverConfig(broker, [space(alpha)], { ...opts, cluster: block })).not.toMatch(/advertise/);
    expect(refusalOf(() => serverConfig(broker, [space(alpha)], { ...opts, cluster: { ...block, advertisePort: 0 } })).code).toBe("render-refused");
  });

  it("refuses a malformed cluster in settings.json, never guesses", () => {
    const ok = newClusterSettings("c", [1, 2, 3], [4, 5, 6]);
    expect(clusterOf(layout, { cluster: ok })).toEqual(ok);
    expect(clusterOf(layout, {})).toBeUndefined();
    for (const bad of [{ ...ok, nodes: ok.nodes.slice(0, 2) }, { ...ok, replicas: 4 }, { ...ok, nodes: [...ok.nodes.slice(0, 2), { ...ok.nodes[2], port: 1 }] }, { ...ok, nodes: [...ok.nodes.slice(0, 2), { ...ok.nodes[0] }] }, { ...ok, name: "C!" }]) {
      expect(refusalOf(() => clusterOf(layout, { cluster: bad })).code).toBe("corrupt-record");
    }
  });

  it("puts each node under nodes/<name> and leaves the single-broker paths as they were", () => {
    expect(layout.nodeServerConf("n1")).toBe("/r/nodes/n1/server.conf");
    expect(layout.nodeStoreDir("n1")).toBe("/r/nodes/n1/store");
    expect(layout.nodeLogFile("n1")).toBe("/r/nodes/n1/log/nats-server.log");
    expect(layout.nodeStagedConf("n1", "12.ab-c")).toBe("/r/nodes/n1/server.conf.next.12abc");
    expect([layout.serverConf, layout.storeDir, layout.logFile, layout.pidFile, layout.runtimeFile]).toEqual(["/r/server.conf", "/r/nats", "/r/logs/nats-server.log", "/r/run/nats-server.pid", "/r/run/broker.json"]);
  });
});

describe("renderNode on a root", () => {
  const roots: { remove(): void }[] = [];
  afterEach(() => roots.splice(0).forEach((r) => r.remove()));

  it("gives every node the root's trust and tenants with its own listener, store, log and routes", () => {
    const root = createTempRoot();
    roots.push(root);
    const s = loadSettings(root.layout);
    if (!s) throw new Error("no settings");
    const cluster = newClusterSettings("cm", [14001, 14002, 14003], [15001, 15002, 15003]);
    saveSettings(root.layout, { ...s, cluster });
    const list = renderList(root.layout, ["default"]);
    const tenant = loadSpaceAccount(root.layout, "default");
    if (!tenant) throw new Error("no default record");
    const texts = cluster.nodes.map((n) => renderNode(root.layout, n.name, [tenant]).text);
    for (const [i, text] of texts.entries()) {
      const n = cluster.nodes[i];
      if (!n) throw new Error("node");
      expect(text).toContain(`server_name: "${n.name}"`);
      expect(text).toContain(`listen: "127.0.0.1:${n.port}"`);
      expect(text).toContain(`store_dir: "${root.layout.nodeStoreDir(n.name)}"`);
      expect(text).toContain(`log_file: "${root.layout.nodeLogFile(n.name)}"`);
      expect(text).toContain(`listen: "127.0.0.1:${n.clusterPort}"`);
      expect(text).not.toContain(`"nats-route://127.0.0.1:${n.clusterPort}"`);
      expect(preloadedAccounts(text)).toEqual(preloadedAccounts(list.text));
      expect(text.slice(text.indexOf("operator:"))).toBe(list.text.slice(list.text.indexOf("operator:")));
    }
    expect(new Set(texts).size).toBe(3);
    // The boot config holds every tenant on disk (none admitted): the authority, $SYS and default, held.
    const maint = renderNode(root.layout, "cm-n2", [], { maintenance: true }).text;
    expect(preloadedAccounts(maint)).toHaveLength(3);
    expect(maint).toContain(`${tenant.publicKey}: "${heldAccountJwt(loadBrokerTrust(root.layout).operator, tenant.jwt)}"`);
    expect(maint).not.toContain(tenant.jwt);
    expect(renderNode(root.layout, "cm-n2", [], { maintenance: true }).text).toBe(maint); // byte-stable: the agent compares digests
    expect(refusalOf(() => renderNode(root.layout, "cm-n2", [tenant], { maintenance: true })).code).toBe("render-refused");
    expect(preloadedAccounts(renderNode(root.layout, "cm-n2", [], { maintenance: true, guards: { ...GUARDS_ON, CLUSTER_BOOT_BARE: true } }).text)).toHaveLength(2); // the switch: no tenant, as before #28
    expect(refusalOf(() => renderNode(root.layout, "cm-n9", [])).code).toBe("corrupt-record");
  });
});


describe("the record's cluster fields", () => {
  const base: InventoryRecord = { generation: 2, spaces: ["a"], appliedGeneration: 2, configDigest: D("a"), pending: null };
  const proof = (g: number) => ({ appliedGeneration: g, configDigest: D("b"), provenAt: "t" });

  it("parses members and per-node proofs, and refuses malformed ones", () => {
    const ok = { ...base, members: ["n1", "n2"], nodes: { n1: proof(2), n2: { ...proof(2), serverConfigDigest: "sha256:x" } } };
    expect(parseInventoryRecord(JSON.stringify(ok))).toEqual(ok);
    expect(parseInventoryRecord(JSON.stringify({ ...base, members: ["n1", "n1"] }))).toMatch(/members/);
    expect(parseInventoryRecord(JSON.stringify({ ...base, nodes: { n1: { appliedGeneration: 2 } } }))).toMatch(/nodes\.n1/);
    expect(parseInventoryRecord(JSON.stringify({ ...base, nodes: [] }))).toMatch(/nodes/);
  });

  it("commits only a generation every member proved, naming the nodes behind", () => {
    expect(() => assertMembersProven(base, 3)).not.toThrow(); // a single broker has no members
    expect(() => assertMembersProven({ ...base, members: ["n1", "n2"], nodes: { n1: proof(3), n2: proof(3) } }, 3)).not.toThrow();
    const e = refusalOf(() => assertMembersProven({ ...base, members: ["n1", "n2", "n3"], nodes: { n1: proof(3), n2: proof(2) } }, 3));
    expect(e.code).toBe("cluster-unproven");
    expect(e.details).toMatchObject({ behind: ["n2", "n3"] });
    expect(e.next).toMatch(/cotal up/);
  });

  it("status marks a node behind the committed generation", () => {
    const owner = { pid: 2 ** 22 + 7, host: "h" };
    const nodes = ["n1", "n2"].map((name, i) => ({ name, owner, url: `nats://h:${i}`, port: i + 1, clusterPort: i + 10, configPath: `/r/nodes/${name}/server.conf`, logFile: "/l" }));
    const st = clusterNodesStatus(nodes, { ...base, generation: 3, members: ["n1", "n2"], nodes: { n1: proof(3), n2: proof(2) } });
    expect(st.map((n) => [n.name, n.appliedGeneration, n.behind, n.running])).toEqual([["n1", 3, false, false], ["n2", 2, true, false]]);
    expect(clusterNodesStatus(nodes, null).map((n) => n.behind)).toEqual([null, null]);
  });

  it("a meta group is formed only when every node names the same leader and the full size", () => {
    expect(metaFormed([{ node: "a", leader: "a", size: 3 }, { node: "b", leader: "a", size: 3 }, { node: "c", leader: "a", size: 3 }], 3)).toBe(true);
    expect(metaFormed([{ node: "a", leader: "a", size: 3 }, { node: "b", leader: "b", size: 3 }, { node: "c", leader: "a", size: 3 }], 3)).toBe(false);
    expect(metaFormed([{ node: "a", leader: "a", size: 2 }, { node: "b", leader: "a", size: 2 }], 3)).toBe(false);
    expect(metaFormed([{ node: "a", error: "timeout" }, { node: "b", leader: "a", size: 3 }], 2)).toBe(false);
  });
});

/** A reloader standing in for every node: the fake's verdict plus a proof for each node it is told proved. */
class NodesReloader implements Reloader {
  fences = 0;
  constructor(
    readonly fake: FakeReloader,
    readonly proving: string[],
  ) {}
  async reload(o?: ReloaderOptions): Promise<ReloadVerdict> {
    if (o?.fence && (await o.fence())) this.fences++;
    const v = await this.fake.reload();
    if (v.outcome !== "reloaded") return v;
    return { ...v, nodes: Object.fromEntries(this.proving.map((n) => [n, { configDigest: D("e"), provenAt: "t" }])) };
  }
}

describe("the saga on a cluster record (in memory)", () => {
  const sagas: MemorySaga[] = [];
  afterEach(() => {
    sagas.splice(0).forEach((s) => s.close());
  });
  const clusterSaga = (proving: string[]): { s: MemorySaga; r: NodesReloader } => {
    const root = createTempRoot();
    const s = memorySaga({ root, seed: false });
    s.store.put({ ...root.record, members: ["n1", "n2", "n3"], nodes: {} });
    const r = new NodesReloader(new FakeReloader(root.layout), proving);
    s.env.reloader = r;
    sagas.push(s);
    return { s, r };
  };

  it("commits once every member proved it, recording each node's proof at the new generation", async () => {
    const { s, r } = clusterSaga(["n1", "n2", "n3"]);
    const out = await runMutation(s.env, add("alpha"));
    expect(out.outcome).toBe("committed");
    const rec = record(s);
    expect(rec.generation).toBe(2);
    expect(rec.members).toEqual(["n1", "n2", "n3"]);
    expect(Object.values(rec.nodes ?? {}).map((n) => n.appliedGeneration)).toEqual([2, 2, 2]);
    expect(r.fences).toBe(1); // the reloader was handed the writer's lease check, and it held
  });

  it("refuses cluster-unproven and keeps the claim when a member has no proof of a removal", async () => {
    const { s, r } = clusterSaga(["n1", "n2", "n3"]);
    expect((await runMutation(s.env, add("alpha"))).outcome).toBe("committed");
    s.env.reloader = new NodesReloader(r.fake, ["n1", "n2"]);
    const e = await runMutation(s.env, remove("alpha")).catch((err: unknown) => err);
    expect(refusalOf(() => { throw e; }).code).toBe("cluster-unproven");
    const rec = record(s);
    expect(rec.generation).toBe(2);
    expect(rec.pending?.removes).toEqual(["alpha"]);
  });

  it("an add commits with a member left behind once another proved it (invariant 4); that member stays behind", async () => {
    const { s } = clusterSaga(["n1", "n2"]);
    expect((await runMutation(s.env, add("alpha"))).outcome).toBe("committed");
    const rec = record(s);
    expect(rec.generation).toBe(2);
    expect(Object.keys(rec.nodes ?? {})).toEqual(["n1", "n2"]);
  });

  it("an add no member proved refuses", async () => {
    const { s } = clusterSaga([]);
    const e = await runMutation(s.env, add("alpha")).catch((err: unknown) => err);
    expect(refusalOf(() => { throw e; }).code).toBe("cluster-unproven");
    expect(record(s).generation).toBe(1);
  });

  it("with the CLUSTER_COMMIT_UNPROVEN switch an unproven removal commits (the guard's control)", async () => {
    const { s, r } = clusterSaga(["n1", "n2", "n3"]);
    expect((await runMutation(s.env, add("alpha"))).outcome).toBe("committed");
    s.env.reloader = new NodesReloader(r.fake, ["n1", "n2"]);
    s.env.guards = { ...GUARDS_ON, CLUSTER_COMMIT_UNPROVEN: true };
    expect((await runMutation(s.env, remove("alpha"))).outcome).toBe("committed");
    expect(record(s).generation).toBe(3);
  });

  it("only a claim that removes and re-signs nothing may leave a node behind", () => {
    const claim = { generation: 3, op: "add" as const, adds: ["a"], removes: [], writer: "w", leaseId: "l", claimedAt: "t" };
    expect(mayLeaveNodesBehind(claim)).toBe(true);
    expect(mayLeaveNodesBehind({ ...claim, op: "batch", adds: ["a", "b"] })).toBe(true);
    expect(mayLeaveNodesBehind({ ...claim, op: "remove", adds: [], removes: ["a"] })).toBe(false);
    expect(mayLeaveNodesBehind({ ...claim, op: "batch", removes: ["b"] })).toBe(false);
    expect(mayLeaveNodesBehind({ ...claim, op: "reconcile" })).toBe(false);
    expect(mayLeaveNodesBehind({ ...claim, op: "limits", adds: [], limits: { space: "a", from: "x", to: "y" } })).toBe(false);
    expect(mayLeaveNodesBehind(null)).toBe(false);
    const base: InventoryRecord = { generation: 2, spaces: [], appliedGeneration: 3, configDigest: D("a"), pending: claim, members: ["n1", "n2", "n3"], nodes: { n1: { appliedGeneration: 3, configDigest: D("b"), provenAt: "t" } } };
    expect(() => assertMembersProven(base, 3, GUARDS_ON, claim)).not.toThrow();
    expect(refusalOf(() => assertMembersProven(base, 3, GUARDS_ON, { ...claim, op: "remove", adds: [], removes: ["a"] })).code).toBe("cluster-unproven");
    expect(refusalOf(() => assertMembersProven({ ...base, nodes: {} }, 3, GUARDS_ON, claim)).code).toBe("cluster-unproven");
    expect(mayLeaveNodesBehind({ ...claim, op: "remove", adds: [], removes: ["a"] }, { ...GUARDS_ON, CLUSTER_BEHIND_ANY_OP: true })).toBe(true);
  });
});

describe("partial proofs (docs/cluster.md)", () => {
  const proof = (g: number) => ({ appliedGeneration: g, configDigest: D("b"), provenAt: "t" });
  const claim = { generation: 3, op: "remove" as const, adds: [], removes: ["beta"], writer: "w", leaseId: "l", claimedAt: "t" };
  const base: InventoryRecord = { generation: 2, spaces: ["alpha", "beta"], appliedGeneration: 2, configDigest: D("a"), pending: null, members: ["n1", "n2", "n3"], nodes: { n1: proof(2), n2: proof(2), n3: proof(2) } };
  const owner = { pid: 2 ** 22 + 7, host: "h" };
  const nodes = ["n1", "n2", "n3"].map((name, i) => ({ name, owner, url: `nats://h:${i}`, port: i + 1, clusterPort: i + 10, configPath: `/r/nodes/${name}/server.conf`, logFile: "/l" }));

  it("the claim carries them; malformed ones are refused", () => {
    const ok = { ...base, pending: { ...claim, proven: { n1: proof(3) } } };
    expect(parseInventoryRecord(JSON.stringify(ok))).toEqual(ok);
    expect(parseInventoryRecord(JSON.stringify({ ...base, pending: { ...claim, proven: { n1: { appliedGeneration: 3 } } } }))).toMatch(/pending\.proven\.n1/);
    expect(parseInventoryRecord(JSON.stringify({ ...base, pending: { ...claim, proven: [] } }))).toMatch(/pending\.proven/);
  });

  it("status names exactly the nodes that have not proven an uncommitted removal", () => {
    const rec = { ...base, pending: { ...claim, proven: { n1: proof(3), n2: proof(3) } } };
    expect(nodesNotProven(rec)).toEqual(["n3"]);
    expect(clusterNodesStatus(nodes, rec).map((n) => [n.name, n.stillAdmits])).toEqual([["n1", []], ["n2", []], ["n3", ["beta"]]]);
    // No partial proof: every node may still admit beta (the conservative side).
    expect(clusterNodesStatus(nodes, { ...base, pending: claim }).map((n) => n.stillAdmits)).toEqual([["beta"], ["beta"], ["beta"]]);
    // A partial proof of another generation (a claim that was rolled back and re-made) proves nothing.
    expect(nodesNotProven({ ...base, pending: { ...claim, proven: { n1: proof(2), n2: proof(3) } } })).toEqual(["n1", "n3"]);
    expect(clusterNodesStatus(nodes, base).map((n) => n.stillAdmits)).toEqual([[], [], []]); // committed: none
    expect(nodesNotProven({ ...base, members: undefined, pending: claim } as InventoryRecord)).toEqual([]); // single broker
  });

  it("a refused cluster reload's proofs land in the claim by CAS, only while the lease is held", async () => {
    const root = createTempRoot();
    const s = memorySaga({ root, seed: false });
    try {
      s.store.put({ ...base, pending: { ...claim, stagedDigest: D("e") } });
      const first = await recordPartialProofs(s.store, async () => true, { n1: { configDigest: D("c"), provenAt: "t" } }, D("e"));
      const second = await recordPartialProofs(s.store, async () => true, { n2: { configDigest: D("c"), provenAt: "t" } }, D("e"));
      expect(second?.from).toBe(first?.to); // one chain of CASes, each reporting the revision it moved from and to
      const rec = record(s);
      expect(Object.entries(rec.pending?.proven ?? {}).map(([n, p]) => [n, p.appliedGeneration])).toEqual([["n1", 3], ["n2", 3]]);
      expect(rec.generation).toBe(2); // a partial proof commits nothing
      expect(nodesNotProven(rec)).toEqual(["n3"]);
      await expect(recordPartialProofs(s.store, async () => false, { n3: { configDigest: D("c"), provenAt: "t" } }, D("e"))).rejects.toThrow(/lease/);
      // A reload of another root config (a rollback re-applying the committed list) proves nothing of the claim.
      expect(await recordPartialProofs(s.store, async () => true, { n3: { configDigest: D("c"), provenAt: "t" } }, D("a"))).toBeUndefined();
      expect(nodesNotProven(record(s))).toEqual(["n3"]);
    } finally {
      s.close();
    }
  });

  it("the saga hands the cluster reloader a recorder: a refusal leaves the proven nodes in the claim", async () => {
    const root = createTempRoot();
    const s = memorySaga({ root, seed: false });
    try {
      s.store.put({ ...root.record, members: ["n1", "n2", "n3"], nodes: {} });
      s.env.reloader = {
        async reload(o?: ReloaderOptions): Promise<ReloadVerdict> {
          await o?.recordPartial?.({ n1: { configDigest: D("c"), provenAt: "t" }, n2: { configDigest: D("c"), provenAt: "t" } });
          throw new CotalError("cluster-unproven", "node n3 did not prove the new config", { next: "cotal up" });
        },
      };
      const e = await runMutation(s.env, add("alpha")).catch((err: unknown) => err);
      expect(refusalOf(() => { throw e; }).code).toBe("cluster-unproven");
      const rec = record(s);
      expect(rec.generation).toBe(1);
      expect(Object.keys(rec.pending?.proven ?? {})).toEqual(["n1", "n2"]);
      expect(nodesNotProven(rec)).toEqual(["n3"]);
    } finally {
      s.close();
    }
  });

  it("proofs recorded one node at a time during a reload that then succeeds: the saga's proof CAS and commit still land", async () => {
    const root = createTempRoot();
    const s = memorySaga({ root, seed: false });
    try {
      s.store.put({ ...root.record, members: ["n1", "n2", "n3"], nodes: {} });
      const seen: string[][] = [];
      s.env.reloader = {
        async reload(o?: ReloaderOptions): Promise<ReloadVerdict> {
          const proofs: Record<string, { configDigest: string; provenAt: string }> = {};
          for (const n of ["n1", "n2", "n3"]) {
            proofs[n] = { configDigest: D("c"), provenAt: "t" };
            await o?.recordPartial?.({ [n]: proofs[n] });
            seen.push(Object.keys(record(s).pending?.proven ?? {}));
          }
          return { outcome: "reloaded", via: "request", line: "3/3", ms: 1, nodes: proofs };
        },
      };
      const out = await runMutation(s.env, add("alpha"));
      expect(out.outcome).toBe("committed");
      expect(seen).toEqual([["n1"], ["n1", "n2"], ["n1", "n2", "n3"]]); // in the claim as each was made
      const rec = record(s);
      expect(rec.pending).toBeNull();
      expect(rec.generation).toBe(2);
      expect(Object.values(rec.nodes ?? {}).map((p) => p.appliedGeneration)).toEqual([2, 2, 2]);
    } finally {
      s.close();
    }
  });
});

describe("the evictor's one result over every node", () => {
  const r = (outcome: EvictionResult["outcome"], kicked: number[] = [], extra: Partial<EvictionResult> = {}): EvictionResult => ({ account: "A", outcome, kicked, remaining: 0, ...extra });
  it("fails if any node failed, evicted if any node cut one, skipped only if every node skipped", () => {
    const ev = summarise("A", { n1: r("none"), n2: r("evicted", [4]), n3: r("evicted", [7, 8]) });
    expect([ev.outcome, ev.kicked, Object.keys(ev.nodes ?? {})]).toEqual(["evicted", [4, 7, 8], ["n1", "n2", "n3"]]);
    expect(summarise("A", { n1: r("evicted", [1]), n2: r("failed", [], { reason: "timeout", remaining: 2 }) })).toMatchObject({ outcome: "failed", reason: "n2: timeout", remaining: 2 });
    expect(summarise("A", { n1: r("skipped", [], { reason: "no KICK" }), n2: r("skipped", [], { reason: "no KICK" }) }).outcome).toBe("skipped");
    expect(summarise("A", { n1: r("skipped"), n2: r("none") }).outcome).toBe("none");
    expect(summarise("A", {}).outcome).toBe("none");
  });
});

describe("the space template's replicas (docs/cluster.md)", () => {
  it("every stream and bucket of the template carries the root's replicas (1 by default)", () => {
    const one = spaceTemplate("beta");
    expect([...one.streams, ...one.buckets].map((x) => x.replicas)).toEqual([1, 1, 1]);
    const three = spaceTemplate("beta", 3);
    expect([...three.streams, ...three.buckets].map((x) => x.replicas)).toEqual([3, 3, 3]);
  });
  it("is R1 or R3, at most the cluster's size, and 1 on a single broker", () => {
    expect(assertTemplateReplicas(1, undefined)).toBe(1);
    expect(assertTemplateReplicas(3, 3)).toBe(3);
    expect(assertTemplateReplicas(1, 5)).toBe(1);
    for (const [n, size] of [[3, undefined], [2, 3], [0, 3], [5, 5], [4, 5]] as const) {
      const e = refusalOf(() => assertTemplateReplicas(n, size));
      expect(e.code, `${n} on ${size ?? "a single broker"}`).toBe("invalid-argument");
      expect(e.next).toMatch(/cotal up/);
    }
    expect(assertTemplateReplicas(3, undefined, { ...GUARDS_ON, TEMPLATE_REPLICAS_UNCHECKED: true })).toBe(3); // the switch lets it through (the guard's control)
  });
  it("settings keep tenantReplicas only as 1 or 3", () => {
    const c = newClusterSettings("c", [1, 2, 3], [4, 5, 6]);
    expect(tenantReplicasOf(c)).toBe(1);
    expect(tenantReplicasOf(undefined)).toBe(1);
    expect(tenantReplicasOf({ ...c, tenantReplicas: 3 })).toBe(3);
    const layout = new RootLayout("/r");
    expect(clusterOf(layout, { cluster: { ...c, tenantReplicas: 3 } })?.tenantReplicas).toBe(3);
    expect(refusalOf(() => clusterOf(layout, { cluster: { ...c, tenantReplicas: 2 } })).code).toBe("corrupt-record");
  });
});
