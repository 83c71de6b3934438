import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const BIN = new URL("../dist/bundle/cotal.js", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "cotal-noroot-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every verb but `up` on a root that does not exist: refused before it runs, nothing created (issue #31).
const VERBS = [["status"], ["space", "list"], ["space", "add", "beta"], ["space", "rm", "beta"], ["space", "creds", "beta"], ["down"], ["broker", "reconcile"], ["jobs", "status"]];

describe("a verb on a missing root", () => {
  it.each(VERBS.map((v) => [v.join(" "), v] as const))("%s refuses root-missing (exit 5), creates nothing, and its next creates no root", (_name, verb) => {
    const root = join(dir, "typo");
    const r = spawnSync(process.execPath, [BIN, "--root", root, ...verb], { encoding: "utf8", cwd: dir, env: { ...process.env, REDIS_URL: "redis://127.0.0.1:1" } });
    expect(r.status, r.stderr).toBe(5);
    expect(r.stderr).toContain("[root-missing]");
    expect(r.stderr).toMatch(/next: ls -la /);
    expect(existsSync(root)).toBe(false);
    expect(existsSync(join(dir, ".cotal"))).toBe(false);
  });
});
