import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RootLayout } from "../src/root/layout.js";
import { clearDownNodes, clearStopIntent, downStopOf, foregroundEnd, recordDownNodes, recordStopIntent, takeStopIntent } from "../src/broker/stop-intent.js";

// How a foreground `cotal up` tells the operator's stop (`cotal down`, a signal) from a broker that
// died on its own: the exit code systemd's Restart=on-failure keys on (docs/service.md).
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function layout(): RootLayout {
  const dir = mkdtempSync(join(tmpdir(), "cotal-stop-intent-"));
  dirs.push(dir);
  mkdirSync(join(dir, "run"), { mode: 0o700 });
  return new RootLayout(dir);
}

const intentPath = (l: RootLayout): string => join(l.runDir, "stop-intent.json");

describe("stop intent", () => {
  it("names the process `down` stops; the foreground up of that process takes it once", () => {
    const l = layout();
    recordStopIntent(l, { pid: 4242, host: "h", procStart: "777" }, "cotal down");
    expect(statSync(intentPath(l)).mode & 0o777).toBe(0o600);
    expect(takeStopIntent(l, { pid: 4242, procStart: "777" })).toBe(true);
    expect(existsSync(intentPath(l))).toBe(false);
    expect(takeStopIntent(l, { pid: 4242, procStart: "777" })).toBe(false); // consumed
  });

  it("another process is not stopped on purpose: a different pid, or the same pid recycled (other start ticks)", () => {
    const l = layout();
    recordStopIntent(l, { pid: 4242, host: "h", procStart: "777" }, "cotal down");
    expect(takeStopIntent(l, { pid: 4243, procStart: "777" })).toBe(false);
    expect(takeStopIntent(l, { pid: 4242, procStart: "778" })).toBe(false);
    expect(existsSync(intentPath(l))).toBe(true); // left for its own process
    expect(takeStopIntent(l, { pid: 4242 })).toBe(true); // start ticks unknown to the reader: the pid decides
  });

  it("no intent, an unreadable one or another format is no stop on purpose", () => {
    const l = layout();
    expect(takeStopIntent(l, { pid: 1 })).toBe(false);
    writeFileSync(intentPath(l), "{not json");
    expect(takeStopIntent(l, { pid: 1 })).toBe(false);
    writeFileSync(intentPath(l), JSON.stringify({ format: "cotal.other/1", owner: { pid: 1 } }));
    expect(takeStopIntent(l, { pid: 1 })).toBe(false);
    clearStopIntent(l);
    expect(existsSync(intentPath(l))).toBe(false);
  });
});

describe("foregroundEnd", () => {
  it("a signal to up or a `cotal down` ends cleanly whatever nats-server's own code (1 on SIGTERM)", () => {
    expect(foregroundEnd({ signalled: true, intended: false, code: 1, signal: null })).toEqual({ kind: "stopped", by: "signal" });
    expect(foregroundEnd({ signalled: false, intended: true, code: 1, signal: null })).toEqual({ kind: "stopped", by: "cotal down" });
    expect(foregroundEnd({ signalled: false, intended: true, code: null, signal: "SIGKILL" })).toEqual({ kind: "stopped", by: "cotal down" }); // down forced it after its grace
  });

  it("anything else is the broker dying, named by its code or signal (kill -9 included)", () => {
    expect(foregroundEnd({ signalled: false, intended: false, code: null, signal: "SIGKILL" })).toEqual({ kind: "died", how: "signal SIGKILL" });
    expect(foregroundEnd({ signalled: false, intended: false, code: 1, signal: null })).toEqual({ kind: "died", how: "exit code 1" });
    expect(foregroundEnd({ signalled: false, intended: false, code: 2, signal: null })).toEqual({ kind: "died", how: "exit code 2" });
  });

  it("nats-server's own clean exit (SIGINT sent to it directly) is a stop, not a death", () => {
    expect(foregroundEnd({ signalled: false, intended: false, code: 0, signal: null })).toEqual({ kind: "stopped", by: "clean exit" });
  });
});

// run/down.json: the cluster nodes `cotal down` stopped, which their running agents keep down until `up` (docs/cluster.md "cotal down holds").
describe("down nodes", () => {
  const downPath = (l: RootLayout): string => join(l.runDir, "down.json");

  it("names only the nodes it stopped, 0600; up clears it", () => {
    const l = layout();
    recordDownNodes(l, ["n1", "n2"], "cotal down");
    expect(statSync(downPath(l)).mode & 0o777).toBe(0o600);
    const by = downStopOf(l, "n2");
    expect(by?.purpose).toBe("cotal down");
    expect(Number.isFinite(Date.parse(by?.at ?? ""))).toBe(true);
    expect(downStopOf(l, "n3")).toBeUndefined(); // another host's node: its agent starts it
    clearDownNodes(l);
    expect(existsSync(downPath(l))).toBe(false);
    expect(downStopOf(l, "n1")).toBeUndefined();
    clearDownNodes(l); // idempotent
  });

  it("an unreadable or foreign file keeps nothing down (the agent starts its node, the safe side for tenants)", () => {
    const l = layout();
    writeFileSync(downPath(l), "{not json");
    expect(downStopOf(l, "n1")).toBeUndefined();
    writeFileSync(downPath(l), JSON.stringify({ format: "cotal.down/2", nodes: ["n1"], purpose: "x", at: "2026-01-01T00:00:00Z" }));
    expect(downStopOf(l, "n1")).toBeUndefined();
    writeFileSync(downPath(l), JSON.stringify({ format: "cotal.down/1", nodes: "n1", purpose: "x", at: "2026-01-01T00:00:00Z" }));
    expect(downStopOf(l, "n1")).toBeUndefined();
    writeFileSync(downPath(l), "null");
    expect(downStopOf(l, "n1")).toBeUndefined();
  });
});
