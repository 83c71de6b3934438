import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureSecretDir, writeFileAtomic, writeFilesAtomic } from "../src/internal.js";

describe("secret files", () => {
  it("write 0600 files atomically into 0700 directories and leave no temp file", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-secret-"));
    const nested = join(dir, "a", "b");
    ensureSecretDir(nested);
    writeFileAtomic(join(nested, "x.json"), "one");
    writeFileAtomic(join(nested, "x.json"), "two");
    expect(readFileSync(join(nested, "x.json"), "utf8")).toBe("two");
    expect(statSync(join(nested, "x.json")).mode & 0o777).toBe(0o600);
    expect(statSync(nested).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "a")).mode & 0o777).toBe(0o700);
    expect(readdirSync(nested)).toEqual(["x.json"]);
  });

  it("never re-modes a directory it did not create", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-secret-"));
    chmodSync(dir, 0o755);
    writeFileAtomic(join(dir, "alice.creds"), "x");
    expect(statSync(dir).mode & 0o777).toBe(0o755);
    expect(statSync(join(dir, "alice.creds")).mode & 0o777).toBe(0o600);
  });
});

describe("secret files, batched", () => {
  it("writes every file 0600 into new 0700 directories, leaves no temp, and replaces atomically", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-secret-batch-"));
    const entries = Array.from({ length: 30 }, (_, i) => ({ path: join(dir, `space.${i}`, "sys.observer.creds"), data: `creds ${i}` }));
    await writeFilesAtomic(entries, { secretDirs: true });
    await writeFilesAtomic(entries.map((e) => ({ ...e, data: `${e.data} again` })), { concurrency: 3, secretDirs: true });
    for (const [i, e] of entries.entries()) {
      expect(readFileSync(e.path, "utf8")).toBe(`creds ${i} again`);
      expect(statSync(e.path).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, `space.${i}`)).mode & 0o777).toBe(0o700);
      expect(readdirSync(join(dir, `space.${i}`))).toEqual(["sys.observer.creds"]);
    }
  });

  it("forces an existing file directory to 0700 only when asked (space dirs), never its parent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-secret-batch-"));
    chmodSync(dir, 0o755);
    const sub = join(dir, "space.a");
    mkdirSync(sub, { mode: 0o755 });
    chmodSync(sub, 0o755);
    await writeFilesAtomic([{ path: join(sub, "x"), data: "x" }]);
    expect(statSync(sub).mode & 0o777).toBe(0o755);
    await writeFilesAtomic([{ path: join(sub, "x"), data: "y" }], { secretDirs: true });
    expect(statSync(sub).mode & 0o777).toBe(0o700);
    expect(statSync(dir).mode & 0o777).toBe(0o755);
  });

  it("a failed write is a typed io error and leaves no temp file behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-secret-batch-"));
    const blocker = join(dir, "space.b");
    writeFileSync(blocker, "a file where a directory should be");
    const bad = join(dir, "ok");
    mkdirSync(bad);
    const target = join(bad, "is-a-dir");
    mkdirSync(target); // renaming a file over a non-empty directory fails
    writeFileSync(join(target, "keep"), "k");
    await expect(writeFilesAtomic([{ path: target, data: "x" }])).rejects.toMatchObject({ code: "io" });
    expect(readdirSync(bad)).toEqual(["is-a-dir"]);
    await expect(writeFilesAtomic([{ path: join(blocker, "creds"), data: "x" }])).rejects.toMatchObject({ code: "io" });
  });
});
