import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ERROR_TABLE } from "@cotal/core/errors";
import { describe, expect, it } from "vitest";
import { workerArgs } from "../src/args.js";

// The worker's own exit code is the error table's row for what stopped it (once hard-coded 6 or 2).
const main = fileURLToPath(new URL("../dist/main.js", import.meta.url));

function runWorker(args: string[], env: Record<string, string>): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, encoding: "utf8", timeout: 20_000 });
  return { code: r.status, stderr: r.stderr };
}

describe("the worker's exit code", () => {
  it("a bad argument is invalid-payload: exit 2, the usage as next, no stack", () => {
    expect(() => workerArgs(["--concurrency", "0"])).toThrow(/malformed argument "--concurrency"/);
    const r = runWorker(["--bogus"], {});
    expect(r.code).toBe(ERROR_TABLE["invalid-payload"].exit);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('[invalid-payload]');
    expect(r.stderr).toContain("next: node apps/worker/dist/main.js [--concurrency N] [--root DIR]");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("a missing root is root-missing: exit 5, as the CLI would", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-worker-exit-"));
    try {
      const r = runWorker([], { COTAL_ROOT: join(dir, "absent"), REDIS_URL: "redis://127.0.0.1:1" });
      expect(r.stderr).toContain("[root-missing]");
      expect(r.code).toBe(ERROR_TABLE["root-missing"].exit);
      expect(r.code).toBe(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
