import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureSecretDir, writeFileAtomic } from "../src/internal.js";

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
