import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { serverConfigOf, watchLog, watchLogSource, type LogSource } from "../src/internal.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
function log(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-log-"));
  dirs.push(d);
  const p = join(d, "nats.log");
  writeFileSync(p, "");
  return p;
}

describe("watchLog", () => {
  it("counts only the named server's lines: another pid's ready line proves nothing", async () => {
    const p = log();
    appendFileSync(p, "[111] 2026/12/01 00:00:00.000000 [INF] Server is ready\n");
    expect(await watchLog(p, 0, { ready: "Server is ready" }, { timeoutMs: 100, pid: 222 })).toBeUndefined();
    appendFileSync(p, "[222] 2026/12/01 00:00:01.000000 [INF] Server is ready\n");
    expect((await watchLog(p, 0, { ready: "Server is ready" }, { timeoutMs: 100, pid: 222 }))?.line).toContain("[222]");
  });

  it("an idle timeout waits while the log grows and gives up only on silence", async () => {
    const p = log();
    const writer = setInterval(() => appendFileSync(p, "[7] restoring stream\n"), 40);
    const t0 = Date.now();
    setTimeout(() => {
      clearInterval(writer);
      appendFileSync(p, "[7] Server is ready\n");
    }, 600);
    const ready = await watchLog(p, 0, { ready: "Server is ready" }, { timeoutMs: 150, idleTimeoutMs: 150, pid: 7 });
    expect(ready?.outcome).toBe("ready");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550); // well past the 150 ms a fixed deadline allows
    const silent = log();
    const t1 = Date.now();
    expect(await watchLog(silent, 0, { ready: "Server is ready" }, { timeoutMs: 150, idleTimeoutMs: 150 })).toBeUndefined();
    expect(Date.now() - t1).toBeLessThan(1_000);
  });
});

describe("watchLogSource", () => {
  it("a half-written line proves nothing until its newline arrives", async () => {
    const p = log();
    appendFileSync(p, "[9] Reloaded server configuration (sha256:ab");
    expect(await watchLog(p, 0, { ok: "Reloaded server configuration" }, { timeoutMs: 80 })).toBeUndefined();
    appendFileSync(p, "cd)\n");
    expect((await watchLog(p, 0, { ok: "Reloaded server configuration" }, { timeoutMs: 80 }))?.line).toBe("[9] Reloaded server configuration (sha256:abcd)");
  });

  it("ends as exited once the writer is gone, but still sees what it wrote before it went", async () => {
    let text = "";
    let alive = true;
    const source: LogSource = { read: (since) => text.slice(since), alive: () => alive };
    const t0 = Date.now();
    setTimeout(() => {
      text += "Server is ready\n";
      alive = false;
    }, 30);
    expect(await watchLogSource(source, 0, { ready: /Server is ready/g }, { timeoutMs: 5_000 })).toEqual({ outcome: "ready", line: "Server is ready" });
    expect(await watchLogSource(source, text.length, { ready: "Server is ready" }, { timeoutMs: 5_000 })).toEqual({ ended: "exited" });
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it("reads only unread bytes: an old match before the offset proves nothing", async () => {
    const text = "Server is ready\nother\n";
    const reads: number[] = [];
    const source: LogSource = { read: (since) => (reads.push(since), text.slice(since)) };
    expect(await watchLogSource(source, 16, { ready: "Server is ready" }, { timeoutMs: 40, pollMs: 5 })).toEqual({ ended: "timeout" });
    expect(reads[0]).toBe(16);
    expect(reads.at(-1)).toBe(text.length);
  });
});

describe("serverConfigOf", () => {
  it("reads the -c of a nats-server command line and nothing else", () => {
    expect(serverConfigOf(["/usr/sbin/nats-server", "-c", "/r/server.conf"])).toBe("/r/server.conf");
    expect(serverConfigOf(["nats-server", "--config", "/r/x.conf"])).toBe("/r/x.conf");
    expect(serverConfigOf(["node", "-c", "/r/server.conf"])).toBeUndefined();
    expect(serverConfigOf(["/usr/sbin/nats-server"])).toBeUndefined();
  });
});
