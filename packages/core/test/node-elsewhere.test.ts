import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { brokerState, nodeAlive, nodeElsewhere, nodeStopped, readRuntime, writeRuntime, type NodeRuntime } from "../src/broker/runtime.js";
import { silentElsewhere } from "../src/broker/info-probe.js";
import { stopBroker } from "../src/broker/process.js";
import { freePort } from "../src/broker/free-port.js";
import { GUARDS_ON } from "../src/guards.js";
import { createTempRoot, type TempRoot } from "../src/testing/index.js";

// docs/cluster.md "Liveness by reachability": a node another host recorded, or that listens on an
// address that is not this host's, is judged by its answer, never by the pid recorded for it.

const roots: TempRoot[] = [];
const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const r of roots.splice(0)) r.remove();
});

const node = (name: string, host: string, url: string, pid = process.pid): NodeRuntime => ({ name, owner: { pid, host }, url, port: Number(new URL(url).port), clusterPort: 1, configPath: `/r/nodes/${name}/server.conf`, logFile: `/r/nodes/${name}/log` });

/** A stand-in "server": sends an INFO line to whoever connects. */
async function infoServer(): Promise<number> {
  const srv = createServer((s) => s.end("INFO {}\r\n"));
  servers.push(srv);
  const port = await freePort();
  await new Promise<void>((r) => srv.listen(port, "127.0.0.1", r));
  return port;
}

describe("a node elsewhere", () => {
  it("is one another host recorded, or that listens on an address that is not this host's", () => {
    expect(nodeElsewhere(node("n1", hostname(), "nats://127.0.0.1:4222"))).toBe(false);
    expect(nodeElsewhere(node("n2", "another-host", "nats://127.0.0.1:4222"))).toBe(true);
    expect(nodeElsewhere(node("n3", hostname(), "nats://10.99.0.3:4222"))).toBe(true);
  });

  it("is never judged alive or stopped by the pid recorded for it, even one alive and stopped here", async () => {
    const child = spawn("sleep", ["30"]);
    children.push(child);
    await new Promise((r) => child.once("spawn", r));
    child.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, 100));
    const pid = child.pid as number;
    expect(nodeStopped(node("here", hostname(), "nats://127.0.0.1:4222", pid))).toBe(true); // control: a local one is judged
    expect(nodeStopped(node("there", "another-host", "nats://127.0.0.1:4222", pid))).toBe(false);
    expect(nodeAlive(node("there", "another-host", "nats://127.0.0.1:4222", pid))).toBe(false);
    child.kill("SIGCONT");
  });

  it("runs if it sends its INFO line: silentElsewhere names only the recorded nodes elsewhere that do not", async () => {
    const answering = await infoServer();
    const closed = await freePort();
    const nodes = [node("local", hostname(), `nats://127.0.0.1:${closed}`), node("up", "h2", `nats://127.0.0.1:${answering}`), node("down", "h3", `nats://127.0.0.1:${closed}`)];
    expect((await silentElsewhere(nodes, "127.0.0.1", 1_000)).map((n) => n.name)).toEqual(["down"]);
  });

  it("keeps a cluster running for the verbs (through it), and `down` never signals it and keeps it recorded", async () => {
    const r = createTempRoot();
    roots.push(r);
    const child = spawn("sleep", ["30"]);
    children.push(child);
    await new Promise((res) => child.once("spawn", res));
    const there = node("n2", "another-host", "nats://10.99.0.2:4222", child.pid as number);
    writeRuntime(r.layout, { owner: { pid: 999_999, host: hostname() }, url: "nats://127.0.0.1:4222", host: "127.0.0.1", port: 4222, configPath: "/r/nodes/n1/server.conf", logFile: "/r/log", serverVersion: "2.15.3", detached: true, startedAt: new Date().toISOString(), nodes: [node("n1", hostname(), "nats://127.0.0.1:4222", 999_999), there] });
    const st = brokerState(r.layout);
    expect(st.running && st.runtime.url).toBe("nats://10.99.0.2:4222");
    expect(brokerState(r.layout, { firstNodeOnly: true }).running).toBe(false);
    const res = await stopBroker(r.layout, 1_000, GUARDS_ON);
    expect(res).toMatchObject({ stopped: false, elsewhere: ["n2"] });
    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
    expect(readRuntime(r.layout)?.nodes?.map((n) => n.name)).toEqual(["n2"]);
  });
});
