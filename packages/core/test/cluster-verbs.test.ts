import { existsSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { clusterNodesStatus, nodeState, type NodeStateInput } from "../src/ops/cluster-status.js";
import { refuseOfflineOnCluster } from "../src/verb/cluster-offline.js";
import { newClusterSettings } from "../src/root/cluster-settings.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import { ERROR_TABLE } from "../src/error-table.js";
import { createTempRoot, type TempRoot } from "../src/testing/index.js";
import { D, pending, rec, refusalOf } from "./fixtures/records.js";
import { GUARDS_ON } from "../src/guards.js";

// docs/cluster.md "Verbs on a cluster root": the offline refusal and each node's own state (pure).

describe("refuseOfflineOnCluster", () => {
  const roots: TempRoot[] = [];
  afterEach(() => {
    roots.splice(0).forEach((r) => r.remove());
    vi.unstubAllEnvs();
  });
  const clusterRoot = (): TempRoot => {
    const root = createTempRoot();
    roots.push(root);
    const s = loadSettings(root.layout);
    if (!s) throw new Error("no settings");
    saveSettings(root.layout, { ...s, cluster: newClusterSettings("cv", [14001, 14002, 14003], [15001, 15002, 15003]) });
    return root;
  };

  it("refuses cluster-offline (exit 6) on a cluster root with the online re-run, and creates no store", () => {
    const root = clusterRoot();
    const e = refusalOf(() => refuseOfflineOnCluster(root.layout, GUARDS_ON, "space rm beta", "needs the running cluster"));
    expect(e.code).toBe("cluster-offline");
    expect(ERROR_TABLE["cluster-offline"].exit).toBe(6);
    expect(e.message).toMatch(/^space rm beta on a cluster root needs the running cluster: .*R3.*nothing was changed$/);
    expect(e.next).toBe(`cotal up --detach --root ${root.layout.root} && {rerun}   # on the running cluster`);
    expect(existsSync(root.layout.storeDir)).toBe(false);
  });

  it("keeps a caller's own next", () => {
    const e = refusalOf(() => refuseOfflineOnCluster(clusterRoot().layout, GUARDS_ON, "down --preserve-state", "has nothing to cut for", "cotal space list"));
    expect(e.next).toBe("cotal space list");
  });

  it("is inert on a single-broker root, and with the CLUSTER_OFFLINE_VERBS switch", () => {
    const single = createTempRoot();
    roots.push(single);
    expect(() => refuseOfflineOnCluster(single.layout, GUARDS_ON, "space rm beta", "x")).not.toThrow();
    expect(() => refuseOfflineOnCluster(clusterRoot().layout, { ...GUARDS_ON, CLUSTER_OFFLINE_VERBS: true }, "space rm beta", "x")).not.toThrow();
  });
});

describe("nodeState", () => {
  const proof = (g: number, digest = D("a")) => ({ appliedGeneration: g, configDigest: digest });
  const input = (extra: Partial<NodeStateInput> = {}): NodeStateInput => ({ running: true, record: rec({}), proof: proof(7), stillAdmits: [], onDiskDigest: D("a"), ...extra });
  const state = (extra: Partial<NodeStateInput> = {}) => nodeState(input(extra)).state;

  it("clean when running, proven at the committed generation, on the config it proved", () => {
    expect(nodeState(input())).toEqual({ state: "clean", why: "generation 7, proven" });
  });

  it("most dangerous first: stopped, unknown, still admits, behind, unproven reload", () => {
    expect(state({ running: false, stillAdmits: ["beta"] })).toBe("stopped");
    expect(state({ record: null })).toBe("unknown");
    expect(state({ record: rec({ pending: pending({ op: "remove", adds: [], removes: ["beta"] }) }), stillAdmits: ["beta"], proof: proof(6) })).toBe("still admits");
    expect(state({ proof: undefined })).toBe("behind");
    expect(nodeState(input({ proof: proof(6) })).why).toBe("proven generation 6, the record is at 7");
    expect(state({ onDiskDigest: D("b") })).toBe("UNPROVEN RELOAD");
    expect(state({ onDiskDigest: undefined })).toBe("UNPROVEN RELOAD");
    // A node on another host: its file is on that host's disk, never judged from here (docs/cluster.md "A node directory of its own").
    expect(state({ onDiskDigest: D("b"), elsewhere: true })).toBe("clean");
    expect(state({ onDiskDigest: undefined, elsewhere: true, proof: proof(6) })).toBe("behind");
    expect(nodeState(input({ onDiskDigest: D("b"), record: rec({ pending: pending() }) })).why).toMatch(/generation 8 is in flight/);
  });
});

describe("clusterNodesStatus on a stopped root", () => {
  it("lists nodes with no recorded process as stopped, pid null", () => {
    const st = clusterNodesStatus([{ name: "n1", url: "nats://h:1", port: 1, clusterPort: 11 }], rec({}), { n1: D("a") });
    expect(st.map((n) => [n.name, n.pid, n.running, n.state])).toEqual([["n1", null, false, "stopped"]]);
  });
});
