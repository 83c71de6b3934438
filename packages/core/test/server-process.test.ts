import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { builtServers } from "../src/broker/binary.js";
import { freePort, freePorts, natsServerBinary, spawnServer, stopProcess, untilReady } from "../src/entries/server-process.js";
import { pidAlive } from "../src/lock/process-identity.js";
import { leakedServers, type RootServer } from "../src/broker/server-scan.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-proc-"));
  dirs.push(d);
  return d;
}
function file(d: string, name: string, mode: number): string {
  const p = join(d, name);
  writeFileSync(p, "#!/bin/sh\nexit 0\n");
  chmodSync(p, mode);
  return p;
}

describe("natsServerBinary", () => {
  it("takes an executable NATS_SERVER_BIN as it is", () => {
    const bin = file(dir(), "nats-server", 0o755);
    expect(natsServerBinary({ NATS_SERVER_BIN: bin, PATH: "" }, [])).toBe(bin);
  });

  it("refuses a NATS_SERVER_BIN that is not executable, naming it, even when another binary exists", () => {
    const d = dir();
    const other = file(d, "nats-server", 0o755);
    const bad = file(d, "not-exec", 0o644);
    for (const override of [bad, join(d, "missing")]) {
      let err: unknown;
      try {
        natsServerBinary({ NATS_SERVER_BIN: override, PATH: d }, [other]);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: "nats-server-missing", details: { path: override } });
      expect((err as Error).message).toContain(override);
    }
  });

  it("without an override: the distribution paths first, then PATH; nothing found is nats-server-missing", () => {
    const a = dir();
    const b = dir();
    const onPath = file(b, "nats-server", 0o755);
    const debian = file(a, "nats-server", 0o755);
    expect(natsServerBinary({ PATH: b }, [join(a, "absent"), debian])).toBe(debian);
    expect(natsServerBinary({ PATH: `${a}-none:${b}` }, [join(a, "absent")])).toBe(onPath);
    expect(() => natsServerBinary({ PATH: "" }, [join(a, "absent")])).toThrow(expect.objectContaining({ code: "nats-server-missing" }));
  });
});

describe("builtServers: the default is the newest release the set-up built", () => {
  it("finds the nearest .tools/nats-server above a module and lists its releases newest first", () => {
    const checkout = dir();
    for (const v of ["2.9.25", "2.15.3", "2.14.10", "2.15.10"]) {
      mkdirSync(join(checkout, ".tools", "nats-server", v), { recursive: true });
      file(join(checkout, ".tools", "nats-server", v), "nats-server", 0o755);
    }
    mkdirSync(join(checkout, ".tools", "nats-server", "2.16.0"), { recursive: true }); // a build that left no binary
    mkdirSync(join(checkout, ".tools", "nats-server", ".build.x1"), { recursive: true }); // a build in progress
    const module = join(checkout, "packages", "cli", "dist", "bundle", "chunk.js");
    expect(builtServers(module).map((p) => p.split("/").at(-2))).toEqual(["2.15.10", "2.15.3", "2.14.10", "2.9.25"]);
    expect(natsServerBinary({ PATH: "" }, [...builtServers(module), "/nonexistent"])).toBe(join(checkout, ".tools", "nats-server", "2.15.10", "nats-server"));
  });

  it("an install with no set-up's builds above it has none", () => {
    expect(builtServers(join(dir(), "a", "b.js"))).toEqual([]);
  });
});

describe("stopProcess", () => {
  // A real child that ignores SIGTERM: only the SIGKILL after the grace period ends it.
  function stubborn(ignoreTerm: boolean): Promise<number> {
    const code = `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ""} process.stdout.write('up\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "ignore"] });
    return new Promise((resolve, reject) => {
      child.once("error", reject);
      child.stdout.once("data", () => resolve(child.pid as number));
    });
  }

  it("escalates to SIGKILL after the grace period when SIGTERM is ignored", async () => {
    const pid = await stubborn(true);
    const t0 = Date.now();
    expect(await stopProcess(pid, 300)).toEqual({ forced: true });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(pidAlive(pid)).toBe(false);
  });

  it("a process that honours SIGTERM is not forced", async () => {
    const pid = await stubborn(false);
    expect(await stopProcess(pid, 5_000)).toEqual({ forced: false });
    expect(pidAlive(pid)).toBe(false);
  });

  it("a pid that is already gone is nothing to stop", async () => {
    const pid = await stubborn(false);
    await stopProcess(pid, 5_000);
    expect(await stopProcess(pid, 5_000)).toEqual({ forced: false });
  });
});

describe("pidAlive", () => {
  // A zombie: `sleep 0.05` backgrounded by a shell that then execs `sleep 5`, which never reaps it.
  it("an exited, unreaped process (a zombie) is not alive; its living parent is", async () => {
    const parent = spawn("sh", ["-c", "sleep 0.05 & echo $!; exec sleep 5"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      const zombie = Number(await new Promise<string>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(d.toString().trim()))));
      await new Promise((r) => setTimeout(r, 300));
      expect(() => process.kill(zombie, 0)).not.toThrow(); // still in the process table
      expect(pidAlive(zombie)).toBe(false);
      expect(pidAlive(parent.pid as number)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});

describe("freePort", () => {
  it("returns a port that can be bound right away", async () => {
    const port = await freePort();
    await new Promise<void>((resolve, reject) => {
      const srv = createServer();
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => srv.close(() => resolve()));
    });
  });

  it("freePorts hands out distinct ports", async () => {
    const ports = await freePorts(8);
    expect(new Set(ports).size).toBe(8);
  });
});

describe("spawnServer / untilReady", () => {
  it("a binary that cannot be spawned is nats-server-missing naming it", async () => {
    const d = dir();
    await expect(spawnServer(join(d, "absent"), [], { output: join(d, "out.log") })).rejects.toMatchObject({ code: "nats-server-missing", details: { path: join(d, "absent") } });
  });

  // A stand-in that logs like nats-server (`[pid] ...`): another pid's ready line must not count.
  function fake(log: string, script: string): Promise<Awaited<ReturnType<typeof spawnServer>>> {
    return spawnServer(process.execPath, ["-e", script, log], { output: `${log}.stdio`, privateFiles: false });
  }

  it("ready only on the child's own ready line; an exit ends the wait at once", async () => {
    const log = join(dir(), "nats.log");
    writeFileSync(log, "[1] 2026/12/01 00:00:00.000000 [INF] Server is ready\n");
    const silent = await fake(log, "setInterval(()=>{},1000)");
    try {
      expect(await untilReady(silent, log, 0, 300)).toBe(false); // pid 1's line proves nothing
    } finally {
      await stopProcess(silent.pid, 1_000, () => silent.done);
    }
    const ready = await fake(log, "const fs=require('fs');setTimeout(()=>fs.appendFileSync(process.argv[1],`[${process.pid}] [INF] Server is ready\\n`),100);setInterval(()=>{},1000)");
    try {
      expect(await untilReady(ready, log, 0, 5_000)).toBe(true);
    } finally {
      await stopProcess(ready.pid, 1_000, () => ready.done);
    }
    const dies = await fake(log, "process.exit(3)");
    const t0 = Date.now();
    expect(await untilReady(dies, log, 0, 10_000)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect((await dies.exited).code).toBe(3);
  });
});

describe("leakedServers (what the preamble and down reap under the lock)", () => {
  const dir = "/r/maintenance";
  const s = (role: "broker" | "maintenance" | "attempt", config: string, pid = 1): RootServer => ({ pid, role, config });
  const servers = [s("broker", "/r/server.conf", 1), s("maintenance", "/r/run/maintenance.conf", 2), s("attempt", `${dir}/attempt-a/backup.conf`, 3), s("attempt", `${dir}/attempt-b/backup.conf`, 4)];
  it("reaps maintenance brokers and every attempt server when the journal records no attempt", () => {
    expect(leakedServers(servers, undefined).map((x) => x.pid)).toEqual([2, 3, 4]);
  });
  it("keeps the journal's own attempt (clean restore-attempt knows what it installed)", () => {
    expect(leakedServers(servers, `${dir}/attempt-a`).map((x) => x.pid)).toEqual([2, 4]);
    expect(leakedServers(servers, `${dir}/attempt-`).map((x) => x.pid)).toEqual([2, 3, 4]); // a prefix is not the dir
  });
  it("keeps every attempt server when the journal is unreadable", () => {
    expect(leakedServers(servers, null).map((x) => x.pid)).toEqual([2]);
  });
});
