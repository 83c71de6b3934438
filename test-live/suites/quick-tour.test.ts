import { execFile } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, repoRoot } from "@cotal/harness";
import type { SpaceListReport, StatusReport } from "@cotal/core";
import { startRedis, type LiveRedis } from "../fixtures/jobs.js";
import { parseJson } from "../fixtures/live-root.js";
import { disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";

// Issue #31: the README's quick tour, run verbatim. scripts/quick-tour.sh extracts the ```sh blocks under
// the README's "Quick tour" heading and runs them from / with COTAL_ROOT set; this suite then checks
// each task's effect from outside the tour (natscli as the independent client, cotal's JSON reports).
// The README fixes the tour's port (4333) and its expectations (100 messages after the restore, 1,000
// queued tenants); a change there must be mirrored here.
const run = promisify(execFile);
const TOUR_PORT = 4333;
const TOUR_URL = `nats://127.0.0.1:${TOUR_PORT}`;

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

let redis: LiveRedis | undefined;
afterEach(async () => {
  await redis?.stop();
  redis = undefined;
});

async function natscliPath(): Promise<string | undefined> {
  try {
    const { stdout } = await run("bash", [join(repoRoot(), "infra", "nats-server.sh"), "cli-path"]);
    const path = stdout.trim();
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

const NATS = await natscliPath();

describe("the README's quick tour", () => {
  it.skipIf(NATS === undefined)("runs verbatim from / (scripts/quick-tour.sh): start, add + creds, rm, backup + restore, 1,000 queued tenants", async () => {
    const nats = NATS as string;
    expect(await portFree(TOUR_PORT), `the tour's port ${TOUR_PORT} (README) is taken on this machine`).toBe(true);
    const r = await trackedRoot("cotal-tour-");
    redis = await startRedis();
    const files = dirname(r.root); // the tour cds beside its root and writes its files there

    const t0 = performance.now();
    const tour = await run("bash", [join(repoRoot(), "scripts", "quick-tour.sh"), "--root", r.root], {
      cwd: "/",
      env: { ...process.env, REDIS_URL: redis.url },
      timeout: 170_000,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((e: { code?: number; stdout?: string; stderr?: string }) => {
      throw new Error(`quick-tour.sh exited ${e.code}\n--- stdout\n${e.stdout}\n--- stderr (its -x trace)\n${e.stderr}\n--- worker.log\n${existsSync(join(files, "worker.log")) ? readFileSync(join(files, "worker.log"), "utf8").slice(-4000) : "(none)"}`);
    });
    const seconds = (performance.now() - t0) / 1000;
    console.log(`[quick-tour] the five tasks ran in ${seconds.toFixed(1)} s`);

    // 1. start: the tour's own broker runs on its port, and the root is clean.
    const status = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(status.state).toBe("clean");
    expect(status.broker.running).toBe(true);
    expect(status.broker.url).toContain(`:${TOUR_PORT}`);

    const list = parseJson<SpaceListReport>(await r.cotal(["space", "list", "--json"]));
    const state = new Map(list.spaces.map((s) => [s.name, s.state]));

    // 2. add + creds: alpha is active and the creds the tour handed out connect with an independent
    // client (natscli), reaching alpha's events stream.
    expect(state.get("alpha")).toBe("active");
    const creds = join(files, "alpha.creds");
    expect(existsSync(creds), "the tour wrote alpha.creds beside its root").toBe(true);
    const info = await run(nats, ["--server", TOUR_URL, "--creds", creds, "stream", "info", "cotal_events_alpha", "--json"]);
    const streamInfo = JSON.parse(info.stdout) as { state: { messages: number; last_seq: number } };

    // 3. rm: default is gone from the inventory, the config and the disk.
    expect(state.has("default"), "default is no longer listed after `cotal space rm default`").toBe(false);
    expect(existsSync(r.layout.spaceDir("default")), "default's local material was reaped").toBe(false);

    // 4. backup + restore: the artifact verifies, and alpha holds the 100 messages of the backup, not
    // the 120 it had after the 20 written later.
    expect(existsSync(join(files, "backups", "alpha-1", "manifest.json"))).toBe(true);
    expect((await r.cotal(["backup", "verify", join(files, "backups", "alpha-1")])).code).toBe(0);
    expect(streamInfo.state.messages).toBe(100);
    expect(tour.stdout).toMatch(/Messages: 100\b/);

    // 5. the queue: 1,000 tenants added through the worker, each active; the worker drained and exited.
    const queued = list.spaces.filter((s) => /^t\d{4}$/.test(s.name));
    expect(queued).toHaveLength(1000);
    expect(queued.filter((s) => s.state !== "active").map((s) => `${s.name}=${s.state}`)).toEqual([]);
    expect(list.spaces).toHaveLength(1001);
    // each is provisioned: a queued tenant's creds connect (natscli again) and find its events stream
    const t1000 = await r.cotal(["space", "creds", "t1000", "--user", "check", "--json"]);
    expect(t1000.code, t1000.stderr).toBe(0);
    const t1000Creds = parseJson<{ path: string }>(t1000).path;
    await run(nats, ["--server", TOUR_URL, "--creds", t1000Creds, "stream", "info", "cotal_events_t1000", "--json"]);
  }, 240_000);

  it("every relative link of the Markdown pages resolves (scripts/check-doc-links.mjs)", async () => {
    const res = await run(process.execPath, [join(repoRoot(), "scripts", "check-doc-links.mjs")]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? "", failed: true }));
    expect("failed" in res ? res.stdout : "", res.stdout).toBe("");
  });
});
