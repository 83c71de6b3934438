/**
 * The one apply path (saga/apply.ts, docs/saga.md "The one apply path"): its order and its fence, in
 * memory; that no other module writes a server's config; and that the cluster boot and `cotal node
 * run` go through it (a seam around `applyConfig` records every call and scripts the reload, so no
 * nats-server runs: the store is the in-memory one, the node's liveness and streams are stubbed).
 */
import { parseAgentProof, proofKey } from "../src/inventory/node-proofs.js";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CotalError } from "../src/errors.js";
import { selfOwner } from "../src/lock/process-identity.js";
import { writeRuntime, type BrokerRuntime, type NodeRuntime } from "../src/broker/runtime.js";
import { renderNode } from "../src/broker/render-root.js";
import { newClusterSettings, type ClusterSettings } from "../src/root/cluster-settings.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import { loadSpaceAccount } from "../src/root/account-store.js";
import { publishMaterial } from "../src/broker/material-bucket.js";
import { materialSource } from "../src/broker/node-material.js";
import type { AccountRecord } from "../src/root/records.js";
import * as apply from "../src/saga/apply.js";
import type { ConfigApply } from "../src/saga/apply.js";
import type { ReloadVerdict } from "../src/saga/reload.js";
import { applyClusterRecord } from "../src/ops/boot-cluster.js";
import { GUARDS_ON } from "../src/guards.js";
import { runNodeAgent } from "../src/ops/node-agent.js";
import { createTempRoot, ManualClock, MemoryInventoryStore, type TempRoot } from "../src/testing/index.js";
import { LEASE_TTL_MS } from "../src/inventory/lease.js";
import { leaseKeyFor } from "../src/verb/session.js";
import { hostname } from "node:os";
import { expectCode } from "./saga-memory-helpers.js";

/** Every applyConfig call the seam saw: its target, and the verdict its scripted reload returned. */
const seen: { target: string; staged: string | undefined; verdict?: ReloadVerdict; material?: string[] }[] = [];
/** The reload the seam puts in place of the real one (no server runs here); undefined: call the real applyConfig as it is. */
let scriptedReload: (() => ReloadVerdict) | undefined;
let memoryStore: MemoryInventoryStore | undefined;

vi.mock("../src/saga/apply.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/saga/apply.js")>();
  return {
    ...real,
    applyConfig: (a: ConfigApply<unknown>) => {
      // The node material's keys as the apply begins: a writer publishes before the first node's rename.
      const call: (typeof seen)[number] = { target: a.target, staged: a.staged, material: [...(memoryStore?.material.keys() ?? [])].sort() };
      seen.push(call);
      const script = scriptedReload;
      // Only a node's apply reloads a server; the root's reload of a cluster is the cluster reloader, which applies each node.
      if (!script || !a.reload || !/\/nodes\/[^/]+\/server\.conf$/.test(a.target)) return real.applyConfig(a);
      return real.applyConfig({ ...a, reload: async () => (call.verdict = script()) });
    },
  };
});
vi.mock("../src/ops/cluster-nodes.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/ops/cluster-nodes.js")>();
  const store = (): MemoryInventoryStore => {
    if (!memoryStore) throw new Error("no memory store armed");
    return memoryStore;
  };
  return { ...real, connectReplicated: async () => Object.assign(store(), { watchRecord: async () => () => undefined, close: async () => undefined }) };
});
vi.mock("../src/broker/runtime.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/broker/runtime.js")>();
  return { ...real, nodeAlive: () => true };
});
vi.mock("../src/ops/node-streams.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/ops/node-streams.js")>();
  return { ...real, waitStreamsServed: async (_l: unknown, nodes: { name: string }[]) => Object.fromEntries(nodes.map((n) => [n.name, { problems: [] }])) };
});

const reloaded = (): ReloadVerdict => ({ outcome: "reloaded", via: "request", line: "[INF] Reloaded server configuration", ms: 0, serverConfigDigest: "sha256:server" });

let root: TempRoot | undefined;
afterEach(() => {
  root?.remove();
  root = undefined;
  seen.length = 0;
  scriptedReload = undefined;
  memoryStore = undefined;
});

describe("applyConfig: stage, fence, rename, reload, prove, record", () => {
  let dir: string;
  let target: string;
  beforeEach(() => {
    root = createTempRoot();
    dir = root.layout.root;
    target = join(dir, "server.conf");
  });
  const verdict: ReloadVerdict = { outcome: "reloaded", via: "signal", line: "[INF] Reloaded server configuration", ms: 1 };

  it("runs the steps in order, the fence right before the rename, the record only after the reload", async () => {
    const steps: string[] = [];
    const staged = join(dir, "server.conf.2.lease");
    const out = await apply.applyConfig({
      target,
      staged,
      config: () => (steps.push("render"), "new bytes\n"),
      fence: { held: async () => (steps.push(`fence:${existsSync(staged)}:${readFileSync(target, "utf8") === "new bytes\n"}`), true), lost: () => new CotalError("lease-lost", "lost") },
      reload: async () => (steps.push(`reload:${readFileSync(target, "utf8")}`), verdict),
      record: async (v) => (steps.push(`record:${v.outcome}`), 42),
      keepPrevious: true,
      steps: {
        timed: async (step, fn) => (steps.push(`<${step}`), await fn().finally(() => steps.push(`${step}>`))),
        staged: async () => void steps.push(`staged:${readFileSync(staged, "utf8").trim()}`),
        afterStage: async () => void steps.push("afterStage"),
        beforeFence: async () => void steps.push("beforeFence"),
        renamed: async () => void steps.push(`renamed:${existsSync(staged)}`),
      },
    });
    expect(steps).toEqual(["<stage", "render", "staged:new bytes", "stage>", "afterStage", "beforeFence", "<promote", "fence:true:false", "promote>", "renamed:false", "reload:new bytes\n", "record:reloaded"]);
    expect(out).toMatchObject({ kind: "reloaded", verdict, proof: 42 });
    expect(out.previous?.toString("utf8")).toBe(root?.conf.text);
    expect((statSync(target).mode & 0o777).toString(8)).toBe("600");
  });

  it("a lost lease: the staged file is unlinked, onLost runs, nothing is renamed or reloaded, the caller's refusal is thrown", async () => {
    const staged = join(dir, "server.conf.2.lease");
    let undone = false;
    let reloads = 0;
    const err = await expectCode(
      apply.applyConfig({ target, staged, config: () => "stale bytes\n", fence: { held: async () => false, onLost: async () => void (undone = true), lost: () => new CotalError("lease-lost", "the lease went") }, reload: async () => (reloads++, verdict), record: async () => 1 }),
      "lease-lost",
    );
    expect(err.message).toBe("the lease went");
    expect(undone).toBe(true);
    expect(reloads).toBe(0);
    expect(existsSync(staged)).toBe(false);
    expect(readFileSync(target, "utf8")).toBe(root?.conf.text);
  });

  it("an unchecked fence (the ablation switches DISABLE_FENCE, CLUSTER_NO_NODE_FENCE) renames without asking", async () => {
    let asked = false;
    await apply.applyConfig({ target, config: () => "x\n", fence: { held: async () => (asked = true, false), lost: () => new CotalError("lease-lost", "lost"), unchecked: true }, record: async () => 0 });
    expect(asked).toBe(false);
    expect(readFileSync(target, "utf8")).toBe("x\n");
  });

  it("no reload (offline): promoted, nothing recorded; without a staged path a temp of this process is used and gone after the rename", async () => {
    let recorded = false;
    const out = await apply.applyConfig({ target, config: () => Buffer.from("offline\n"), fence: { held: async () => true, lost: () => new CotalError("lease-lost", "lost") }, record: async () => (recorded = true) });
    expect(out.kind).toBe("promoted");
    expect(recorded).toBe(false);
    expect(readFileSync(target, "utf8")).toBe("offline\n");
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  it("the record step sees an unproven verdict too and answers it (a refusal propagates)", async () => {
    const unproven: ReloadVerdict = { outcome: "unproven", via: "signal", logTail: "", ms: 0 };
    await expectCode(apply.applyConfig({ target, config: () => "y\n", fence: { held: async () => true, lost: () => new CotalError("lease-lost", "lost") }, reload: async () => unproven, record: async (v) => { throw new CotalError("reload-unproven", v.outcome); } }), "reload-unproven");
  });
});

const srcDir = join(dirname(fileURLToPath(import.meta.url)), "..", "src");
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []));
}

describe("one writer of a server's config", () => {
  // The test seam's temp root writes its first config itself; the product's configs no server runs yet go through writeUnservedConfig.
  const BEFORE_START = new Set(["testing/temp-root.ts"]);
  const CONF_PATH = /\b(serverConf|nodeServerConf|stagedConf|nodeStagedConf|configPath)\b/;
  const WRITE = /\b(writeFileAtomic|writeDurable|renameDurable|renameSync|writeFileSync|copyFileSync|rename|writeFile)\s*\(([^;]*)/g;

  it("no module but saga/apply.ts writes or renames a server's config (those that run before the server are named)", () => {
    const writers: string[] = [];
    for (const file of sources(srcDir)) {
      const rel = relative(srcDir, file);
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(WRITE)) if (CONF_PATH.test(m[2] ?? "")) writers.push(rel);
    }
    expect([...new Set(writers)].filter((f) => !BEFORE_START.has(f)).sort()).toEqual([]);
  });

  it("the mutation, the resume's rename back, each cluster node, the cluster boot and the node agent import the apply path and no file writer", () => {
    const text = (f: string): string => readFileSync(join(srcDir, f), "utf8");
    for (const f of ["saga/mutation.ts", "saga/resume-executor.ts", "saga/cluster-reloader.ts", "ops/boot-cluster.ts"]) {
      expect(text(f), f).toMatch(/import \{[^}]*\bapplyConfig\b[^}]*\} from "(\.\/|\.\.\/saga\/)apply\.js"/);
    }
    expect(text("ops/node-agent.ts")).toMatch(/\bapplyToNode\(/);
    for (const f of ["saga/mutation.ts", "saga/resume-executor.ts", "saga/cluster-reloader.ts", "ops/boot-cluster.ts", "ops/node-agent.ts"]) {
      expect(text(f), f).not.toMatch(/\b(writeFileAtomic|writeDurable|renameDurable|renameSync)\b/);
    }
  });

  it("a config no server runs yet (the cold boot's render, a stopped node's config, a new cluster's first) is written by writeUnservedConfig alone", () => {
    const text = (f: string): string => readFileSync(join(srcDir, f), "utf8");
    for (const f of ["ops/boot-root.ts", "ops/cluster-nodes.ts", "ops/boot-cluster.ts"]) {
      expect(text(f), f).toMatch(/import \{[^}]*\bwriteUnservedConfig\b[^}]*\} from "\.\.\/saga\/apply\.js"/);
      expect(text(f), f).toMatch(/\bwriteUnservedConfig\((layout\.serverConf|layout\.nodeServerConf\()/);
    }
  });
});

/** A 3-node cluster root on disk (settings, run/broker.json naming every node), no server started. */
function clusterRoot(): { root: TempRoot; cluster: ClusterSettings; runtime: BrokerRuntime } {
  const r = createTempRoot();
  const settings = loadSettings(r.layout);
  if (!settings) throw new Error("no settings");
  const cluster = newClusterSettings("cw", [14101, 14102, 14103], [15101, 15102, 15103]);
  saveSettings(r.layout, { ...settings, cluster });
  const nodes: NodeRuntime[] = cluster.nodes.map((n) => {
    mkdirSync(r.layout.nodeDir(n.name), { recursive: true, mode: 0o700 });
    writeFileSync(r.layout.nodeServerConf(n.name), renderNode(r.layout, n.name, [], { maintenance: true }).text, { flag: "w", mode: 0o600 });
    return { name: n.name, owner: selfOwner(), url: `nats://127.0.0.1:${n.port}`, port: n.port, clusterPort: n.clusterPort, configPath: r.layout.nodeServerConf(n.name), logFile: r.layout.nodeLogFile(n.name) };
  });
  const first = nodes[0] as NodeRuntime;
  const runtime = writeRuntime(r.layout, { owner: first.owner, url: first.url, host: "127.0.0.1", port: first.port, configPath: first.configPath, logFile: first.logFile, serverVersion: "2.15.3", detached: true, startedAt: new Date().toISOString(), nodes });
  return { root: r, cluster, runtime };
}

describe("the cluster boot and the node agent go through the one apply path", () => {
  it("cluster boot, a committed record: the root's server.conf, then every node's config, each through applyConfig; the proofs land in the record", async () => {
    const c = clusterRoot();
    root = c.root;
    memoryStore = new MemoryInventoryStore();
    memoryStore.put({ ...c.root.record, members: ["cw-n1", "cw-n2", "cw-n3"], nodes: {} });
    scriptedReload = reloaded;
    const rec = await applyClusterRecord(c.root.layout, c.runtime, c.cluster, GUARDS_ON, () => undefined);
    const l = c.root.layout;
    expect(seen.map((s) => s.target)).toEqual([l.serverConf, l.nodeServerConf("cw-n1"), l.nodeServerConf("cw-n2"), l.nodeServerConf("cw-n3")]);
    // Only the node applies reload a server; the root's apply reloads through them (the cluster reloader).
    expect(seen.filter((s) => s.verdict).map((s) => s.target)).toEqual([l.nodeServerConf("cw-n1"), l.nodeServerConf("cw-n2"), l.nodeServerConf("cw-n3")]);
    expect(readFileSync(l.nodeServerConf("cw-n2"), "utf8")).toBe(renderNode(l, "cw-n2", [loadSpaceAccount(l, "default") as AccountRecord]).text);
    expect(Object.keys(rec.nodes ?? {}).sort()).toEqual(["cw-n1", "cw-n2", "cw-n3"]);
    expect(memoryStore.peek()?.record.nodes?.["cw-n3"]).toMatchObject({ appliedGeneration: 1, serverConfigDigest: "sha256:server" });
    expect(memoryStore.peekLease(leaseKeyFor(l))).toBeUndefined(); // released
    // The node material was in the public bucket before the first node's apply (docs/cluster.md "The public bucket").
    expect(seen[0]?.material).toEqual([]);
    expect(seen[1]?.material).toEqual(["base", "index", "space.default"]);
  });

  it("cluster boot, a new root: the seed's first list goes through applyConfig too, fenced by the lease", async () => {
    const c = clusterRoot();
    root = c.root;
    memoryStore = new MemoryInventoryStore();
    scriptedReload = reloaded;
    const rec = await applyClusterRecord(c.root.layout, c.runtime, c.cluster, GUARDS_ON, () => undefined);
    expect(seen[0]?.target).toBe(c.root.layout.serverConf);
    expect(seen).toHaveLength(4);
    expect(rec).toMatchObject({ generation: 1, spaces: ["default"], members: ["cw-n1", "cw-n2", "cw-n3"] });
    expect(memoryStore.peek()?.record.generation).toBe(1);
  });

  it("cluster boot with the lease lost before the rename: lease-lost, nothing renamed, nothing reloaded", async () => {
    const c = clusterRoot();
    root = c.root;
    const clock = new ManualClock();
    const store = new MemoryInventoryStore({ clock });
    memoryStore = store;
    store.put({ ...c.root.record, members: ["cw-n1", "cw-n2", "cw-n3"], nodes: {} });
    // The fence's re-check is the first checkLease: the TTL ran out just before it, and another writer took the lease.
    store.on("checkLease", 1, async () => {
      clock.advance(LEASE_TTL_MS + 1);
      await store.acquireLease(leaseKeyFor(c.root.layout), { pid: 424242, host: hostname(), verb: "space rm (other)" });
    });
    scriptedReload = reloaded;
    const before = readFileSync(c.root.layout.serverConf, "utf8");
    const err = await expectCode(applyClusterRecord(c.root.layout, c.runtime, c.cluster, GUARDS_ON, () => undefined), "lease-lost");
    expect(err.message).toContain("before the committed list was applied");
    expect(seen.map((s) => s.target)).toEqual([c.root.layout.serverConf]);
    expect(seen[0]?.verdict).toBeUndefined();
    expect(readFileSync(c.root.layout.serverConf, "utf8")).toBe(before);
    expect(readdirSync(c.root.layout.root).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  it("cotal node run: its node's config through applyConfig (the node's staged path), and the node's proof recorded", async () => {
    const c = clusterRoot();
    root = c.root;
    memoryStore = new MemoryInventoryStore();
    memoryStore.put({ ...c.root.record, members: ["cw-n1", "cw-n2", "cw-n3"], nodes: {} });
    scriptedReload = reloaded;
    // Nothing published yet: the agent cannot render, and applies nothing (docs/cluster.md "The public bucket, and the agent renders from it").
    await expectCode(runNodeAgent({ root: c.root.layout.root, node: "cw-n2", once: true }), "render-refused");
    expect(seen).toEqual([]);
    await publishMaterial(memoryStore.materialKv(), materialSource(c.root.layout));
    const out = await runNodeAgent({ root: c.root.layout.root, node: "cw-n2", once: true });
    expect(out).toMatchObject({ node: "cw-n2", state: "serving", applied: 1, started: 0 });
    expect(seen.map((s) => s.target)).toEqual([c.root.layout.nodeServerConf("cw-n2")]);
    expect(seen[0]?.staged).toMatch(/nodes\/cw-n2\/server\.conf\.next\./);
    expect(seen[0]?.verdict?.outcome).toBe("reloaded");
    // Its proof is on its own key, never in the record (docs/cluster.md "The agent's proof on its own key").
    expect(memoryStore.peek()?.record.nodes?.["cw-n2"]).toBeUndefined();
    expect(parseAgentProof(memoryStore.proofs.get(proofKey("cw-n2")), "cw-n2")).toMatchObject({ node: "cw-n2", generation: 1, serverConfigDigest: "sha256:server" });
    expect([...memoryStore.proofs.keys()]).toEqual([proofKey("cw-n2")]);
    expect(readFileSync(c.root.layout.nodeServerConf("cw-n2"), "utf8")).toBe(renderNode(c.root.layout, "cw-n2", [loadSpaceAccount(c.root.layout, "default") as AccountRecord]).text);
  });

  it("cotal node run with nothing published: its printed next (`cotal --root R up --detach` on the control host) is the cluster apply that publishes, and the agent then serves", async () => {
    const c = clusterRoot();
    root = c.root;
    memoryStore = new MemoryInventoryStore();
    memoryStore.put({ ...c.root.record, members: ["cw-n1", "cw-n2", "cw-n3"], nodes: {} });
    scriptedReload = reloaded;
    const refused = await expectCode(runNodeAgent({ root: c.root.layout.root, node: "cw-n2", once: true }), "render-refused");
    expect(refused.message).toMatch(/node material is not published yet/);
    expect(refused.next).toBe(`cotal --root ${c.root.layout.root} up --detach   # on the control host: its cluster reload publishes the node material; this agent reads it again each round`);
    // What that `up` runs on a running cluster root (ops/boot-cluster.ts): the committed record applied to every node.
    await applyClusterRecord(c.root.layout, c.runtime, c.cluster, GUARDS_ON, () => undefined);
    expect([...memoryStore.material.keys()].sort()).toEqual(["base", "index", "space.default"]);
    expect(await runNodeAgent({ root: c.root.layout.root, node: "cw-n2", once: true })).toMatchObject({ node: "cw-n2", state: "serving" });
  });

  it("cotal node run, an unproven reload: the apply's record step refuses reload-unproven and records no proof", async () => {
    const c = clusterRoot();
    root = c.root;
    memoryStore = new MemoryInventoryStore();
    memoryStore.put({ ...c.root.record, members: ["cw-n1", "cw-n2", "cw-n3"], nodes: {} });
    scriptedReload = () => ({ outcome: "unproven", via: "signal", logTail: "no line", ms: 0 });
    await publishMaterial(memoryStore.materialKv(), materialSource(c.root.layout));
    await expectCode(runNodeAgent({ root: c.root.layout.root, node: "cw-n1", once: true }), "reload-unproven");
    expect(seen.map((s) => s.target)).toEqual([c.root.layout.nodeServerConf("cw-n1")]);
    expect(memoryStore.peek()?.record.nodes?.["cw-n1"]).toBeUndefined();
    expect(memoryStore.proofs.size).toBe(0);
  });
});
