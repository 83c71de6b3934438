import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { describeError, type CotalError } from "../src/entries/errors.js";
import { refusalOf } from "./fixtures/records.js";
import { checkBackupOut, checkRestoreFrom, checkScheduleDir, marginFor, spaceStoreBytes, verifyRestoreFrom } from "../src/backup/artifact-paths.js";

const dirs: string[] = [];
function temp(prefix = "cotal-paths-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) {
    chmodSync(d, 0o700);
    rmSync(d, { recursive: true, force: true });
  }
});


/** The `next` as the CLI prints it for `cotal --root /r <verb…> <flag> <path>`. */
function printed(err: CotalError, verb: string[], flag: string, path: string): string {
  return describeError(err, { argv: ["--root", "/r", ...verb, flag, path] }).next ?? "";
}

const BACKUP = ["space", "backup", "alpha"];
const RESTORE = ["space", "restore", "alpha"];
const isRoot = process.getuid?.() === 0;
const free = (p: string) => Number(statfsSync(p).bavail) * Number(statfsSync(p).bsize);

function artifact(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "manifest.json"), "{}");
  return dir;
}

describe("checkBackupOut: the directory a one-off backup creates", () => {
  it("returns the absolute path of a fresh directory in a writable parent with room, and leaves nothing behind", () => {
    const d = temp();
    expect(checkBackupOut(join(d, "a"), { space: "alpha", needBytes: 1024 })).toBe(join(d, "a"));
    expect(readdirSync(d), "the write probe is removed").toEqual([]);
  });

  it("refuses an existing path with the same command on the first free sibling", () => {
    const d = temp();
    mkdirSync(join(d, "a"));
    const e = refusalOf(() => checkBackupOut(join(d, "a"), { space: "alpha" }));
    expect(e.code).toBe("io");
    expect(e.details?.reason).toBe("exists");
    expect(e.message).toContain(join(d, "a"));
    expect(printed(e, BACKUP, "--out", join(d, "a"))).toBe(`cotal --root /r space backup alpha --out ${join(d, "a")}.1`);
    mkdirSync(join(d, "a.1"));
    expect(printed(refusalOf(() => checkBackupOut(join(d, "a"), { space: "alpha" })), BACKUP, "--out", join(d, "a"))).toMatch(/--out \S+\/a\.2$/);
    expect(checkBackupOut(join(d, "a.2"), { space: "alpha" }), "the positive control: the suggested path passes").toBe(join(d, "a.2"));
  });

  it("refuses a missing parent with mkdir -p and the same command", () => {
    const d = temp();
    const out = join(d, "x", "y", "a");
    const e = refusalOf(() => checkBackupOut(out, { space: "alpha" }));
    expect([e.code, e.details?.reason]).toEqual(["io", "parent-missing"]);
    expect(e.message).toContain(out);
    expect(printed(e, BACKUP, "--out", out)).toBe(`mkdir -p '${join(d, "x", "y")}' && cotal --root /r space backup alpha --out ${out}`);
    expect(existsSync(join(d, "x")), "nothing was created").toBe(false);
    mkdirSync(join(d, "x", "y"), { recursive: true });
    expect(checkBackupOut(out, { space: "alpha" })).toBe(out);
  });

  it("refuses a parent that is a regular file, pointing beside it", () => {
    const d = temp();
    writeFileSync(join(d, "file"), "x");
    const out = join(d, "file", "a");
    const e = refusalOf(() => checkBackupOut(out, { space: "alpha" }));
    expect([e.code, e.details?.reason]).toEqual(["io", "not-a-directory"]);
    expect(e.message).toContain(join(d, "file"));
    expect(printed(e, BACKUP, "--out", out)).toBe(`cotal --root /r space backup alpha --out ${join(d, "a")}.1`);
  });

  it("refuses a parent nobody may create entries in (/proc: access(2) says yes to root, mkdir says no)", () => {
    const e = refusalOf(() => checkBackupOut("/proc/cotal-backup-test", { space: "alpha" }));
    expect([e.code, e.details?.reason]).toEqual(["io", "not-writable"]);
    expect(e.message).toContain("/proc/cotal-backup-test");
    expect(describeError(e).exit).toBe(8);
  });

  it.skipIf(isRoot)("refuses a parent of mode 0500 owned by this user with chmod u+wx and the same command", () => {
    const d = temp();
    const ro = join(d, "ro");
    mkdirSync(ro, { mode: 0o500 });
    const e = refusalOf(() => checkBackupOut(join(ro, "a"), { space: "alpha" }));
    expect([e.code, e.details?.reason, e.details?.errno]).toEqual(["io", "not-writable", "EACCES"]);
    expect(printed(e, BACKUP, "--out", join(ro, "a"))).toBe(`chmod u+wx '${ro}' && cotal --root /r space backup alpha --out ${join(ro, "a")}`);
    chmodSync(ro, 0o700);
    expect(checkBackupOut(join(ro, "a"), { space: "alpha" })).toBe(join(ro, "a"));
  });

  it("refuses a file system with less room than the space plus a margin, naming both figures", () => {
    const d = temp();
    const need = free(d) * 2;
    const e = refusalOf(() => checkBackupOut(join(d, "a"), { space: "alpha", needBytes: need, root: join(d, "root") }));
    expect([e.code, e.details?.reason]).toEqual(["io", "no-space"]);
    expect(e.details?.needBytes).toBe(need + marginFor(need));
    expect(e.message).toMatch(/has [\d.]+ MiB free; .* needs [\d.]+ MiB/);
    expect(e.message).toContain(join(d, "a"));
    // nowhere has room: look at the disk, then the same command
    expect(printed(e, BACKUP, "--out", join(d, "a"))).toMatch(/^df -h '.*' {3}# .*lacks room.* then: cotal --root \/r space backup alpha --out /);
    expect(checkBackupOut(join(d, "a"), { space: "alpha", needBytes: 1 }), "the positive control").toBe(join(d, "a"));
  });

  const shm = existsSync("/dev/shm") ? "/dev/shm" : undefined;
  it.skipIf(!shm || free(tmpdir()) < free(shm ?? tmpdir()) * 1.2 + 2 ** 30)("offers the root's parent when it has the room the named file system lacks", () => {
    const small = mkdtempSync(join(shm as string, "cotal-paths-"));
    dirs.push(small);
    const big = temp();
    const need = free(small) + 2 ** 28;
    const e = refusalOf(() => checkBackupOut(join(small, "a"), { space: "alpha", needBytes: need, root: join(big, "root") }));
    expect(e.details?.reason).toBe("no-space");
    expect(printed(e, BACKUP, "--out", join(small, "a"))).toMatch(new RegExp(`^cotal --root /r space backup alpha --out ${big}/a\\.1 {3}#`));
  });
});

describe("checkScheduleDir: where scheduled runs put their dated artifacts", () => {
  it("accepts an existing writable directory and a creatable one, creating nothing", () => {
    const d = temp();
    expect(checkScheduleDir(d, { space: "alpha" })).toBe(d);
    expect(checkScheduleDir(join(d, "new", "deeper"), { space: "alpha" })).toBe(join(d, "new", "deeper"));
    expect(readdirSync(d)).toEqual([]);
  });

  it("refuses a regular file with its first free sibling", () => {
    const d = temp();
    writeFileSync(join(d, "f"), "x");
    const e = refusalOf(() => checkScheduleDir(join(d, "f"), { space: "alpha" }));
    expect([e.code, e.details?.reason]).toEqual(["io", "not-a-directory"]);
    expect(e.message).toContain(join(d, "f"));
    expect(printed(e, [...BACKUP, "--every", "1d", "--queue"], "--out", join(d, "f"))).toBe(`cotal --root /r space backup alpha --every 1d --queue --out ${join(d, "f")}.1`);
  });

  it("refuses a directory under a regular file, and one it may not create (/proc)", () => {
    const d = temp();
    writeFileSync(join(d, "f"), "x");
    expect(refusalOf(() => checkScheduleDir(join(d, "f", "sub"), { space: "alpha" })).details?.reason).toBe("not-a-directory");
    const proc = refusalOf(() => checkScheduleDir("/proc/cotal-schedule-test", { space: "alpha" }));
    expect([proc.code, proc.details?.reason]).toEqual(["io", "not-writable"]);
    expect(proc.message).toContain("/proc/cotal-schedule-test");
  });

  it("refuses a file system without room for the space", () => {
    const d = temp();
    const e = refusalOf(() => checkScheduleDir(d, { space: "alpha", needBytes: free(d) * 2 }));
    expect([e.code, e.details?.reason]).toEqual(["io", "no-space"]);
    expect(e.message).toContain(d);
  });
});

describe("checkRestoreFrom: the artifact a restore reads", () => {
  it("accepts a directory with a readable manifest.json", () => {
    const a = artifact(join(temp(), "alpha-1"));
    expect(checkRestoreFrom(a)).toBe(a);
  });

  it("refuses a missing path: the newest complete artifact beside it when there is one, else a listing", () => {
    const d = temp();
    const missing = refusalOf(() => checkRestoreFrom(join(d, "nope")));
    expect([missing.code, missing.details?.reason]).toEqual(["io", "missing"]);
    expect(missing.message).toContain(join(d, "nope"));
    expect(printed(missing, RESTORE, "--from", join(d, "nope"))).toBe(`ls -la '${d}'   # no such artifact: find the artifact directory (the one holding manifest.json)`);
    const a = artifact(join(d, "alpha-2024"));
    const beside = refusalOf(() => checkRestoreFrom(join(d, "nope")));
    expect(printed(beside, RESTORE, "--from", join(d, "nope"))).toMatch(new RegExp(`^cotal --root /r space restore alpha --from ${a} {3}#`));
    expect(beside.details?.suggestion).toBe(a);
  });

  it("refuses a regular file (its directory when that is an artifact) and a directory without a manifest", () => {
    const a = artifact(join(temp(), "alpha-1"));
    const file = refusalOf(() => checkRestoreFrom(join(a, "manifest.json")));
    expect([file.code, file.details?.reason]).toEqual(["io", "not-a-directory"]);
    expect(printed(file, RESTORE, "--from", join(a, "manifest.json"))).toBe(`cotal --root /r space restore alpha --from ${a}`);
    const empty = join(dirname(a), "empty");
    mkdirSync(empty);
    const none = refusalOf(() => checkRestoreFrom(empty));
    expect(none.code).toBe("artifact-invalid");
    expect(none.message).toContain(empty);
    expect(printed(none, RESTORE, "--from", empty)).toMatch(new RegExp(`--from ${a} {3}#`));
  });

  it.skipIf(isRoot)("refuses an unreadable manifest as io", () => {
    const a = artifact(join(temp(), basename("alpha-1")));
    chmodSync(join(a, "manifest.json"), 0o000);
    const e = refusalOf(() => checkRestoreFrom(a));
    expect([e.code, e.details?.reason]).toEqual(["io", "unreadable"]);
    expect(e.next).toMatch(/^chmod -R u\+rX /);
  });
});

describe("verifyRestoreFrom: a damaged artifact's way out", () => {
  it("names the re-run from the newest complete artifact beside it, else where to look; never a placeholder", () => {
    const d = temp();
    const damaged = artifact(join(d, "alpha-2"));
    const alone = refusalOf(() => verifyRestoreFrom(damaged));
    expect(alone.code).toBe("artifact-invalid");
    const lone = printed(alone, RESTORE, "--from", damaged);
    expect(lone).toMatch(new RegExp(`^ls -la '?${d}'? {3}# this one is damaged`));
    expect(lone).not.toMatch(/<[a-z ]+>/);
    const good = artifact(join(d, "alpha-1"));
    const beside = refusalOf(() => verifyRestoreFrom(damaged));
    expect(printed(beside, RESTORE, "--from", damaged)).toMatch(new RegExp(`^cotal --root /r space restore alpha --from ${good} {3}#`));
    expect(beside.details?.suggestion).toBe(good);
  });
});

describe("spaceStoreBytes", () => {
  it("is 0 for a space the root has no record of", () => {
    expect(spaceStoreBytes(temp(), "alpha")).toBe(0);
  });
});
