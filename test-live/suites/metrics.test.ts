import type { ChildProcess } from "node:child_process";
import { realpathSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { harnessTeardown, parsePromText, promValue, spawnCotal, type PromFamily } from "@cotal/harness";
import { disposeJobsFixtures, jobsFixtures, jobsRoot, startWorker } from "../fixtures/jobs.js";
import { connectCreds } from "../fixtures/nats.js";
import { until } from "../fixtures/until.js";
import { ok } from "../fixtures/space-data.js";
import { parseJson } from "../fixtures/live-root.js";
import { credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { runPrinted } from "../fixtures/printed.js";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";

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

/**
 * Scrapes until the series (exact labels) reads `want`, at most 5 s. `cotal metrics` here runs with
 * --max-age-ms 0 and --usage-max-age-ms 0, so each scrape is a fresh read; the bound covers the server
 * counting a closed connection a moment late. On timeout the last value read is what fails.
 */
async function scrapeUntil(url: string, name: string, labels: Record<string, string>, want: number): Promise<void> {
  let last: number | undefined;
  await until(`${name} ${JSON.stringify(labels)} = ${want}`, async () => (last = promValue(await scrape(url), name, labels)) === want, 5_000, 100).catch(() => undefined);
  expect(last, `${name} ${JSON.stringify(labels)}`).toBe(want);
}

describe("cotal metrics", () => {
  it("tenants by state, a tenant's storage, streams and connections move with what the tenant does; the root state goes BLOCKED and back; POST is refused", async () => {
    const { r, up } = await upRoot([], "cotal-metrics-");
    const root = realpathSync(r.root);
    const url = await startMetrics(r.root);

    const before = await scrape(url);
    expect(promValue(before, "cotal_root_state", { root, state: "clean" })).toBe(1);
    expect(promValue(before, "cotal_tenants", { root, state: "active" })).toBe(1);
    expect(promValue(before, "cotal_tenant_storage_bytes", { root, space: "beta" })).toBeUndefined();

    ok(await r.cotal(["space", "add", "beta", "--max-disk", "8M"]));
    const app = await credsText(r, "beta", "app");
    const nc = await connectCreds(up.url, app);
    try {
      const kv = await new Kvm(nc).open("cotal_state_beta");
      for (let i = 0; i < 10; i++) await kv.put(`k${i}`, new Uint8Array(512).fill(i));
      const after = await scrape(url);
      expect(promValue(after, "cotal_tenants", { root, state: "active" })).toBe(2);
      expect(promValue(after, "cotal_tenant_storage_bytes", { root, space: "beta" })).toBeGreaterThan(5_000);
      expect(promValue(after, "cotal_tenant_storage_bytes_limit", { root, space: "beta" })).toBe(8 * 1024 ** 2);
      expect(promValue(after, "cotal_tenant_connections", { root, space: "beta" })).toBeGreaterThanOrEqual(1);
      expect(promValue(after, "cotal_tenant_usage_unread", { root })).toBe(0);

      // streams: the tenant's own client makes one more, the series counts it
      const beta = { root, space: "beta" };
      const streams = promValue(after, "cotal_tenant_streams", beta) ?? -1;
      expect(streams).toBeGreaterThanOrEqual(1); // its state bucket
      const admin = await r.cotal(["space", "creds", "beta", "--admin", "--json"]); // the tenant's own administrator (docs/commands/space.md)
      const anc = await connectCreds(up.url, parseJson<{ path: string }>(ok(admin)).path);
      try {
        await (await jetstreamManager(anc)).streams.add({ name: "orders", subjects: ["orders.>"], max_bytes: 1024 * 1024 });
      } finally {
        await anc.close();
      }
      await scrapeUntil(url, "cotal_tenant_streams", beta, streams + 1);

      // connections: three more with the tenant's cred are counted, and uncounted once closed
      // the baseline: nc alone (the admin's close may be counted a moment late; the usage reader is not counted)
      const conns = 1;
      await scrapeUntil(url, "cotal_tenant_connections", beta, conns);
      const more = await Promise.all([1, 2, 3].map(() => connectCreds(up.url, app)));
      try {
        await scrapeUntil(url, "cotal_tenant_connections", beta, conns + 3);
      } finally {
        await Promise.all(more.map((c) => c.close()));
      }
      await scrapeUntil(url, "cotal_tenant_connections", beta, conns);
    } finally {
      await nc.close();
    }

    // the root's state: a removal killed after its journal leaves it BLOCKED (as `cotal status` says);
    // the `next:` it prints, run as printed, clears it
    const cut = await r.cotal(["space", "rm", "beta", "--yes"], { env: { COTAL_FAILPOINT: "rm-streams-deleted:kill" } });
    expect(cut.code, cut.stderr).not.toBe(0);
    const blocked = await scrape(url);
    expect(promValue(blocked, "cotal_root_state", { root, state: "BLOCKED" })).toBe(1);
    expect(promValue(blocked, "cotal_root_state", { root, state: "clean" })).toBe(0);
    expect(promValue(blocked, "cotal_tenants", { root, state: "removing" })).toBe(1);
    const next = (await statusOf(r)).next ?? "";
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} space rm beta --yes\\b`));
    ok(await runPrinted(next));
    const cleared = await scrape(url);
    expect(promValue(cleared, "cotal_root_state", { root, state: "BLOCKED" })).toBe(0);
    expect(promValue(cleared, "cotal_root_state", { root, state: "clean" })).toBe(1);
    expect(promValue(cleared, "cotal_tenants", { root, state: "active" })).toBe(1);

    const post = await fetch(`${url}/metrics`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${url}/healthz`, { method: "DELETE" })).status).toBe(405);
  }, 30_000);

  it("queue depth moves with a queued add and its run; the worker serves the root series and counts the saga's attempts and the conflict it lost", async () => {
    const { r, env } = await jobsRoot("cotal-metrics-q-");
    const root = realpathSync(r.root);
    ok(await r.cotal(["space", "add", "beta", "--queue", "--no-wait"], { env }));
    const url = await startMetrics(r.root, env);
    const queued = await scrape(url);
    expect(promValue(queued, "cotal_queue_jobs", { root, type: "space-add", state: "waiting" })).toBe(1);
    expect(promValue(queued, "cotal_tenants", { root, state: "active" })).toBe(1);

    // The worker's add parks after its decision read (matrix R1's failpoint, released by hand as R3 does).
    // It reads under the maintenance lock, so a writer on this host waits for it and never races it:
    // the racing add is another host's (the lock skipped by its test-only switch, docs/development.md,
    // so only the inventory's compare-and-set fences the two). It commits meanwhile; the worker's CAS
    // loses once, re-reads and commits.
    const parked = barrierDir(r, "metrics-conflict");
    const w = startWorker("cli", { root: r.root, redisUrl: env.REDIS_URL as string, args: ["--metrics-port", "0", "--batch-wait", "0"], env: { COTAL_FAILPOINT: `after-read:barrier:${parked}:2` } });
    jobsFixtures.workers.push(w);
    const health = (await w.ready()) as string;
    await barrierReached(parked, "the worker's add parked after its read", 15_000);
    const rootSamples = async (name: string) => (await scrape(health)).get(name)?.samples.filter((s) => s.labels.root === root) ?? [];
    expect(await rootSamples("cotal_saga_conflicts_total"), "no conflict before the race").toEqual([]);
    ok(await r.cotal(["space", "add", "gamma"], { env: { ...env, COTAL_TEST_UNSAFE_SKIP_LOCK: "1" } }));
    releaseBarrier(parked);

    const ok1 = await until("the worker's committed attempt", async () => (await rootSamples("cotal_saga_attempts_total")).find((s) => s.labels.outcome === "ok"), 15_000, 100);
    expect(ok1.value).toBe(1);
    const op = ok1.labels.op as string;
    const fromWorker = await scrape(health);
    expect(promValue(fromWorker, "cotal_saga_attempts_total", { root, op, outcome: "conflict" })).toBe(1);
    expect(promValue(fromWorker, "cotal_saga_conflicts_total", { root, op })).toBe(1);
    // the worker's snapshot may be up to 10 s old (docs/metrics.md, "Scrape cost"): that it serves the series is what counts here
    expect(promValue(fromWorker, "cotal_tenants", { root, state: "active" }), "the worker serves the root series too").toBeGreaterThanOrEqual(1);
    const done = await scrape(url);
    expect(promValue(done, "cotal_queue_jobs", { root, type: "space-add", state: "waiting" })).toBe(0);
    expect(promValue(done, "cotal_tenants", { root, state: "active" })).toBe(3);
  }, 45_000);
});
