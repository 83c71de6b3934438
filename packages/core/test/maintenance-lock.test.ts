import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireMaintenanceLock, assertLockHeld, isCotalError, readLockOwner, releaseMaintenanceLock, RootLayout, withMaintenanceLock } from "../src/internal.js";

const root = () => mkdtempSync(join(tmpdir(), "cotal-lock-"));

describe("maintenance lock", () => {
  it("is exclusive and names the live owner in the refusal", () => {
    const r = root();
    const lock = acquireMaintenanceLock(r, "test holder");
    expect(lock.owner.pid).toBe(process.pid);
    expect(lock.owner.host).toBe(hostname());
    try {
      acquireMaintenanceLock(r, "second");
      expect.unreachable();
    } catch (e) {
      expect(isCotalError(e, "lock-held")).toBe(true);
      expect((e as Error).message).toContain(`pid ${process.pid}`);
      expect((e as Error).message).toContain("test holder");
    }
    releaseMaintenanceLock(lock);
    const again = acquireMaintenanceLock(r, "third");
    releaseMaintenanceLock(again);
  });

  it("reaps a lock whose owner is dead", async () => {
    const r = root();
    const child = spawn(process.execPath, ["-e", "0"]);
    const deadPid = await new Promise<number>((res) => child.on("exit", () => res(child.pid!)));
    const layout = new RootLayout(r);
    acquireMaintenanceLock(r, "setup"); // creates the directory
    writeFileSync(layout.lockFile, JSON.stringify({ pid: deadPid, host: hostname(), token: "dead", startedAt: "x", purpose: "crashed" }));
    const lock = acquireMaintenanceLock(r, "after crash");
    expect(JSON.parse(readFileSync(layout.lockFile, "utf8")).token).toBe(lock.owner.token);
    releaseMaintenanceLock(lock);
  });

  it("treats a recycled pid (different start time) as dead", () => {
    const r = root();
    const layout = new RootLayout(r);
    releaseMaintenanceLock(acquireMaintenanceLock(r, "setup"));
    writeFileSync(layout.lockFile, JSON.stringify({ pid: process.pid, host: hostname(), procStart: "1", token: "old", startedAt: "x", purpose: "old" }));
    const lock = acquireMaintenanceLock(r, "new");
    releaseMaintenanceLock(lock);
  });

  it("release checks the token and leaves another holder's lock alone", () => {
    const r = root();
    const lock = acquireMaintenanceLock(r, "first");
    const layout = new RootLayout(r);
    const other = { ...lock.owner, token: "someone-else" };
    writeFileSync(layout.lockFile, JSON.stringify(other));
    expect(() => assertLockHeld(lock)).toThrow(/no longer held/);
    releaseMaintenanceLock(lock);
    const owner = readLockOwner(r);
    expect(owner !== "corrupt" && owner?.token).toBe("someone-else");
  });

  it("hands a held lock down without re-acquiring it", async () => {
    const r = root();
    const lock = acquireMaintenanceLock(r, "caller");
    const seen = await withMaintenanceLock(r, "helper", lock, async (l) => l.owner.token);
    expect(seen).toBe(lock.owner.token);
    assertLockHeld(lock); // the helper did not release the caller's lock
    releaseMaintenanceLock(lock);
  });
});
