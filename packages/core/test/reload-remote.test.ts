import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { BrokerRuntime } from "../src/broker/runtime.js";
import { reloadAndProve } from "../src/saga/reload.js";

// A node on another host is never signalled (docs/cluster.md "Partition by a cut link"): the pid
// run/broker.json records for it means nothing here. A stand-in process counts the SIGHUPs it gets.

let child: ChildProcess | undefined;
let dir: string | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A process that prints "HUP" on each SIGHUP, and a runtime naming it on a port nobody listens on. */
async function standIn(): Promise<{ runtime: BrokerRuntime; hups: () => number }> {
  dir = mkdtempSync(join(tmpdir(), "cotal-reload-remote-"));
  const logFile = join(dir, "server.log");
  writeFileSync(logFile, "");
  child = spawn(process.execPath, ["-e", "process.on('SIGHUP', () => console.log('HUP')); console.log('ready'); setInterval(() => {}, 1000)"], { stdio: ["ignore", "pipe", "ignore"] });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  await new Promise<void>((res) => child?.stdout?.once("data", () => res()));
  const runtime: BrokerRuntime = {
    format: "cotal.runtime/1",
    owner: { pid: child.pid as number, host: hostname() },
    url: "nats://10.99.0.3:1",
    host: "10.99.0.3",
    port: 1,
    configPath: join(dir, "server.conf"),
    logFile,
    serverVersion: "2.15.3",
    detached: true,
    startedAt: new Date().toISOString(),
  };
  return { runtime, hups: () => out.split("\n").filter((l) => l === "HUP").length };
}

describe("reloadAndProve of a server on another host (remote)", () => {
  it("proves nothing and sends no signal when it cannot be asked", async () => {
    const s = await standIn();
    const v = await reloadAndProve(s.runtime, { remote: true, timeoutMs: 300 });
    expect(v).toMatchObject({ outcome: "unproven", via: "request" });
    expect("logTail" in v && v.logTail).toMatch(/another host .*a signal from here would not reach it/);
    await new Promise((r) => setTimeout(r, 100));
    expect(s.hups()).toBe(0);
  });

  it("control: the same server as a local one is signalled (the path the remote rule closes)", async () => {
    const s = await standIn();
    const v = await reloadAndProve(s.runtime, { timeoutMs: 300 });
    expect(v).toMatchObject({ outcome: "unproven", via: "signal" }); // no reload line in its log
    await new Promise((r) => setTimeout(r, 100));
    expect(s.hups()).toBe(1);
  });
});
