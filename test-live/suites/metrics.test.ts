import type { ChildProcess } from "node:child_process";
import { realpathSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown, parsePromText, promValue, spawnCotal, type PromFamily } from "@cotal/harness";
import { disposeJobsFixtures, jobsFixtures, jobsRoot, startWorker } from "../fixtures/jobs.js";
import { connectCreds } from "../fixtures/nats.js";
import { until } from "../fixtures/until.js";
import { ok } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, upRoot } from "../fixtures/tenants.js";

// Issue 32: `cotal metrics` serves the root's series with no worker: scraped, parsed by the strict
// parser (packages/harness/src/prom-text.ts), and each series moves when what it counts moves.

let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((r) => child?.once("exit", () => r()));
    child.kill("SIGTERM");
    await exited;
  }
  child = undefined;
  await disposeLiveRoots();
  await disposeJobsFixtures();
});
afterAll(async () => {
  await harnessTeardown();
});

/** `cotal metrics --port 0`, its URL from the line it prints; Redis from `env` (none: --no-redis). */
async function startMetrics(root: string, env?: Record<string, string>): Promise<string> {
  const c = spawnCotal(["metrics", "--port", "0", ...(env ? [] : ["--no-redis"]), "--max-age-ms", "0", "--usage-max-age-ms", "0"], { root, ...(env ? { env } : {}) });
  child = c;
  c.stdin?.end();
  let text = "";
  c.stdout?.setEncoding("utf8").on("data", (s: string) => (text += s));
  c.stderr?.setEncoding("utf8").on("data", (s: string) => (text += s));
  const t0 = Date.now();
  let url: string | undefined;
  while (!(url = /serving (http:\/\/\S+)\/metrics/.exec(text)?.[1])) {
    if (c.exitCode !== null || Date.now() - t0 > 10_000) throw new Error(`cotal metrics did not start:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return url;
}

async function scrape(url: string): Promise<Map<string, PromFamily>> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePromText(await res.text()); // strict: a malformed line fails the cell
}

describe("cotal metrics", () => {
  it("tenants by state and a tenant's storage move with a space added and written to; POST is refused", async () => {
    const { r, up } = await upRoot([], "cotal-metrics-");
    const root = realpathSync(r.root);
    const url = await startMetrics(r.root);

    const before = await scrape(url);
    expect(promValue(before, "cotal_root_state", { root, state: "clean" })).toBe(1);
    expect(promValue(before, "cotal_tenants", { root, state: "active" })).toBe(1);
    expect(promValue(before, "cotal_tenant_storage_bytes", { root, space: "beta" })).toBeUndefined();

    ok(await r.cotal(["space", "add", "beta", "--max-disk", "8M"]));
    const nc = await connectCreds(up.url, await credsText(r, "beta", "app"));
    try {
      const kv = await new Kvm(nc).open("cotal_state_beta");
      for (let i = 0; i < 10; i++) await kv.put(`k${i}`, new Uint8Array(512).fill(i));
      const after = await scrape(url);
      expect(promValue(after, "cotal_tenants", { root, state: "active" })).toBe(2);
      expect(promValue(after, "cotal_tenant_storage_bytes", { root, space: "beta" })).toBeGreaterThan(5_000);
      expect(promValue(after, "cotal_tenant_storage_bytes_limit", { root, space: "beta" })).toBe(8 * 1024 ** 2);
      expect(promValue(after, "cotal_tenant_connections", { root, space: "beta" })).toBeGreaterThanOrEqual(1);
      expect(promValue(after, "cotal_tenant_usage_unread", { root })).toBe(0);
    } finally {
      await nc.close();
    }

    const post = await fetch(`${url}/metrics`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${url}/healthz`, { method: "DELETE" })).status).toBe(405);
  }, 30_000);

  it("queue depth moves with a queued add and its run; the worker serves the root series and counts the saga's attempts", async () => {
    const { r, env } = await jobsRoot("cotal-metrics-q-");
    const root = realpathSync(r.root);
    ok(await r.cotal(["space", "add", "beta", "--queue", "--no-wait"], { env }));
    const url = await startMetrics(r.root, env);
    const queued = await scrape(url);
    expect(promValue(queued, "cotal_queue_jobs", { root, type: "space-add", state: "waiting" })).toBe(1);
    expect(promValue(queued, "cotal_tenants", { root, state: "active" })).toBe(1);

    const w = startWorker("cli", { root: r.root, redisUrl: env.REDIS_URL as string, args: ["--metrics-port", "0", "--batch-wait", "0"] });
    jobsFixtures.workers.push(w);
    const health = await w.ready();
    const attempts = async () => (await scrape(health as string)).get("cotal_saga_attempts_total")?.samples.filter((s) => s.labels.root === root && s.labels.outcome === "ok") ?? [];
    await until("the worker's saga attempt", async () => (await attempts()).length > 0, 15_000, 250);
    expect((await attempts()).reduce((n, s) => n + s.value, 0)).toBe(1);
    const done = await scrape(url);
    expect(promValue(done, "cotal_queue_jobs", { root, type: "space-add", state: "waiting" })).toBe(0);
    expect(promValue(done, "cotal_tenants", { root, state: "active" })).toBe(2);
    const fromWorker = await scrape(health as string);
    // the worker's snapshot may be up to 10 s old (docs/metrics.md, "Scrape cost"): that it serves the series is what counts here
    expect(promValue(fromWorker, "cotal_tenants", { root, state: "active" }), "the worker serves the root series too").toBeGreaterThanOrEqual(1);
    expect(promValue(fromWorker, "cotal_saga_conflicts_total", { root, op: "add" })).toBeUndefined();
  }, 45_000);
});
