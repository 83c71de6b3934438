import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { describeError } from "../src/entries/errors.js";
import { acquireMaintenanceLock, releaseMaintenanceLock, releaseOwnerFile, takeOwnerFile } from "../src/lock/maintenance-lock.js";
import { RootLayout } from "../src/root/layout.js";
import { writeFileAtomic } from "../src/root/secret-files.js";
import { GUARDS_ON } from "../src/guards.js";

// Issue #28 finding 8: a full disk left `lock.json.*.tmp` behind. The lock's write is made to fail
// after its temp exists (the disk fills mid-write); nothing may be left in the directory.

const fail = vi.hoisted(() => ({ errno: undefined as string | undefined }));
vi.mock("../src/root/secret-files.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/root/secret-files.js")>();
  return {
    ...real,
    writeDurable: (path: string, data: string | Uint8Array, mode?: number, flag?: string): void => {
      if (fail.errno === undefined) return real.writeDurable(path, data, mode, flag);
      real.writeDurable(path, "", mode, flag); // the temp exists; then the write fails
      throw Object.assign(new Error(`${fail.errno}: write failed`), { code: fail.errno, syscall: "write", path });
    },
  };
});

afterEach(() => {
  fail.errno = undefined;
  vi.unstubAllEnvs();
});

const root = (): string => mkdtempSync(join(tmpdir(), "cotal-lock-temp-"));

describe("a lock whose write fails", () => {
  it.each(["ENOSPC", "EIO", "EDQUOT"])("%s: refused io naming the lock, no temp and no lock left; the next attempt takes it", (errno) => {
    const r = root();
    const layout = new RootLayout(r);
    fail.errno = errno;
    let thrown: unknown;
    try {
      acquireMaintenanceLock(r, "full disk");
    } catch (err) {
      thrown = err;
    }
    const shape = describeError(thrown);
    expect(shape).toMatchObject({ code: "io", exit: 8, details: { path: layout.lockFile, errno } });
    expect(shape.message).toContain(layout.lockFile);
    expect(readdirSync(layout.maintenanceDir)).toEqual([]);
    fail.errno = undefined;
    const lock = acquireMaintenanceLock(r, "room again"); // positive control
    expect(readdirSync(layout.maintenanceDir)).toEqual(["lock.json"]);
    releaseMaintenanceLock(lock);
  });

  it("with the guard switched off (KEEP_LOCK_TEMP) the temp stays: what this test catches", () => {
    const r = root();
    fail.errno = "ENOSPC";
    expect(() => acquireMaintenanceLock(r, "full disk", { ...GUARDS_ON, KEEP_LOCK_TEMP: true })).toThrow();
    expect(readdirSync(new RootLayout(r).maintenanceDir).filter((f) => /^lock\.json\..+\.tmp$/.test(f))).toHaveLength(1);
  });

  it("writeFileAtomic removes its temp when the write fails midway", () => {
    const dir = root();
    const eio = Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
    // `length` is read after the temp is opened: the write fails with the temp on disk.
    const data = new Proxy(new Uint8Array(8), { get: (t, k) => (k === "length" ? (() => { throw eio; })() : Reflect.get(t, k)) });
    expect(() => writeFileAtomic(join(dir, "x.json"), data)).toThrow(/could not write/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe("owner files (the node agent's lock)", () => {
  it("returns a live holder, takes over a dead one's, and releases only its own", async () => {
    const path = join(root(), "agent.lock");
    const mine = takeOwnerFile(path, "first");
    if (!("taken" in mine)) throw new Error("not taken");
    const second = takeOwnerFile(path, "second");
    expect(second).toMatchObject({ held: { pid: process.pid, purpose: "first" }, status: "alive" });
    releaseOwnerFile(path, "not-my-token");
    expect("held" in takeOwnerFile(path, "third")).toBe(true);
    releaseOwnerFile(path, mine.taken.token);

    const child = spawn(process.execPath, ["-e", "0"]);
    const dead = await new Promise<number>((res) => child.on("exit", () => res(child.pid as number)));
    writeFileSync(path, JSON.stringify({ pid: dead, host: hostname(), token: "dead", startedAt: "x", purpose: "killed agent" }));
    const after = takeOwnerFile(path, "after the kill");
    expect("taken" in after && after.taken.purpose).toBe("after the kill");
  });
});
