import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { brokerState, UNRECORDED_HOST, unrecorded, withUnrecordedNodes, writeRuntime, readRuntime, type BrokerRuntime, type NodeRuntime } from "../src/broker/runtime.js";
import { stopProcess } from "../src/broker/stop-process.js";
import { stopBroker } from "../src/broker/process.js";
import { reloadAndProve } from "../src/saga/reload.js";
import { GUARDS_ON } from "../src/guards.js";
import { loadSettings, saveSettings } from "../src/root/settings.js";
import type { TempRoot } from "../src/testing/index.js";
import { threeHostRoot } from "./fixtures/cluster-root.js";

// docs/cluster.md "Finding the nodes": on hosts of their own each host's run/broker.json records its
// own node; the control host knows the others' client URLs from settings.json and asks them.

const roots: TempRoot[] = [];
afterEach(() => roots.splice(0).forEach((r) => r.remove()));

function recordOnly(root: TempRoot, names: string[]): void {
  const s = loadSettings(root.layout);
  const nodes = (s?.cluster?.nodes ?? []).filter((n) => names.includes(n.name)).map(
    (n): NodeRuntime => ({ name: n.name, owner: { pid: process.pid, host: "cm-h1" }, url: `nats://${n.host}:${n.port}`, port: n.port, clusterPort: n.clusterPort, configPath: root.layout.nodeServerConf(n.name), logFile: root.layout.nodeLogFile(n.name) }),
  );
  const first = nodes[0] as NodeRuntime;
  writeRuntime(root.layout, { owner: first.owner, url: first.url, host: "127.0.0.1", port: first.port, configPath: first.configPath, logFile: first.logFile, serverVersion: "2.15.3", detached: true, startedAt: new Date(0).toISOString(), nodes });
}

describe("the nodes this host's run/broker.json does not record", () => {
  it("are added from settings.json, in its order, with no pid, for a node on another host only", async () => {
    const root = await threeHostRoot(roots);
    recordOnly(root, ["cm-n1"]);
    const st = brokerState(root.layout);
    expect(st.running).toBe(true); // through node 1, recorded by another host's name
    const nodes = st.runtime?.nodes ?? [];
    expect(nodes.map((n) => n.name)).toEqual(["cm-n1", "cm-n2", "cm-n3"]);
    expect(nodes.map((n) => n.url)).toEqual(["nats://10.99.0.1:14001", "nats://10.99.0.2:14002", "nats://10.99.0.3:14003"]);
    expect(nodes.map(unrecorded)).toEqual([false, true, true]);
    expect(nodes[1]?.owner).toEqual({ pid: 0, host: UNRECORDED_HOST });
    expect(nodes[1]?.configPath).toBe(root.layout.nodeServerConf("cm-n2"));
    // The switch, and a read that must not invent nodes (down writes back what it read).
    expect(brokerState(root.layout, { unrecordedIgnored: true }).runtime?.nodes?.map((n) => n.name)).toEqual(["cm-n1"]);
    // Nothing is written: run/broker.json still records node 1 alone.
    expect(readRuntime(root.layout)?.nodes?.map((n) => n.name)).toEqual(["cm-n1"]);
  });

  it("adds none on this host's own address (loopback), nor to a runtime already recording every node", async () => {
    const root = await threeHostRoot(roots);
    const s = loadSettings(root.layout);
    if (!s?.cluster) throw new Error("no cluster");
    saveSettings(root.layout, { ...s, cluster: { ...s.cluster, nodes: s.cluster.nodes.map((n) => ({ ...n, host: "127.0.0.1" })) } });
    recordOnly(root, ["cm-n1"]);
    const rt = readRuntime(root.layout) as BrokerRuntime;
    expect(withUnrecordedNodes(root.layout, rt).nodes?.map((n) => n.name)).toEqual(["cm-n1"]);
    const all = await threeHostRoot(roots);
    recordOnly(all, ["cm-n1", "cm-n2", "cm-n3"]);
    const full = readRuntime(all.layout) as BrokerRuntime;
    expect(withUnrecordedNodes(all.layout, full)).toBe(full);
  });

  it("is never signalled: no SIGTERM or SIGHUP to pid 0 (our own process group), and down writes none back", async () => {
    expect(await stopProcess(0, 10)).toEqual({ forced: false });
    expect(await stopProcess(1, 10)).toEqual({ forced: false });
    const root = await threeHostRoot(roots);
    recordOnly(root, ["cm-n1"]);
    const n2 = brokerState(root.layout).runtime?.nodes?.[1] as NodeRuntime;
    const v = await reloadAndProve({ ...(readRuntime(root.layout) as BrokerRuntime), owner: n2.owner, url: n2.url, logFile: n2.logFile, serverVersion: "2.9.10" }, { guards: GUARDS_ON });
    expect(v).toMatchObject({ outcome: "unproven", via: "signal" });
    expect("logTail" in v ? v.logTail : "").toMatch(/no pid of nats:\/\/10\.99\.0\.2:14002 is known on this host/);
    await stopBroker(root.layout, 100, GUARDS_ON);
    expect(readRuntime(root.layout)?.nodes?.map((n) => n.name) ?? []).not.toContain("cm-n2");
    expect(hostname()).not.toBe(UNRECORDED_HOST);
  });
});
