import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort, harnessTeardown, parsePromText, promValue, type PromFamily } from "@cotal/harness";
import { openQueue, queueNameFor, rootKeyFor, type JobsStatusReport } from "@cotal/jobs";
import { mintSpaceCreds, type SpaceListReport, type StatusReport } from "@cotal/core";
import { reloadCount } from "../fixtures/broker-log.js";
import { disposeJobsFixtures, jobsFixtures, jobsRoot, startWorker, tenantNames, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { until } from "../fixtures/until.js";
import { runPrinted } from "../fixtures/printed.js";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { connects } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

const { workers } = jobsFixtures;
afterEach(disposeJobsFixtures);
afterAll(async () => {
  await harnessTeardown();
});

function worker(kind: "cli" | "app", r: LiveRoot, redis: LiveRedis, args: string[] = [], env: Record<string, string> = {}): LiveWorker {
  const w = startWorker(kind, { root: r.root, redisUrl: redis.url, args, env });
  workers.push(w);
  return w;
}

async function scrape(health: string | undefined): Promise<Map<string, PromFamily>> {
  expect(health).toBeTruthy();
  const res = await fetch(`${health}/metrics`);
  expect(res.status).toBe(200);
  return parsePromText(await res.text()); // strict: a malformed line fails the test
}

describe("bulk onboarding through the queue", () => {
  // Version-dependent: before 2.14.8 every reload drops the provisioners in flight, which are retried (provision-batch.ts).
  it("1000 tenants from a file through 2 worker processes: all active, provisioned, creds connect, ≤ 10 reloads", VERSION_DEPENDENT, async () => {
    const { r, up, redis, env } = await jobsRoot();
    const R = { root: realpathSync(r.root) }; // every series the worker serves names its root (docs/metrics.md)
    const names = tenantNames(1000);
    const file = join(r.root, "..", "tenants.txt");
    writeFileSync(file, `# 1000 tenants\n${names.join("\n")}\n`);
    // one `cotal worker`, one apps/worker: the same worker from packages/jobs behind both entry points
    const w1 = worker("cli", r, redis, ["--concurrency", "500", "--batch-size", "250", "--batch-wait", "500"]);
    const w2 = worker("app", r, redis, ["--concurrency", "500"], { COTAL_JOBS_BATCH_MAX: "250", COTAL_JOBS_BATCH_WAIT_MS: "500" });
    await w1.ready();
    const health = await w2.ready();
    const before = reloadCount(r.layout);
    const idle = await scrape(health);
    expect(promValue(idle, "cotal_jobs_processed_total", { ...R, type: "space-add", outcome: "added" })).toBeUndefined();
    expect(promValue(idle, "cotal_reloads_total", R)).toBe(0);

    const t0 = performance.now();
    const add = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env, timeoutMs: 150_000 });
    const wallMs = performance.now() - t0;
    expect(add.code, `${add.stderr}\n--- w1\n${w1.log()}\n--- w2\n${w2.log()}`).toBe(0);
    const res = parseJson<{ enqueued: number; completed: number; failed: unknown[]; lost: unknown[] }>(add);
    expect(res.enqueued).toBe(1000);
    expect(res.completed).toBe(1000);
    const reloads = reloadCount(r.layout) - before;
    const batches = [...`${w1.log()}${w2.log()}`.matchAll(/batch of (\d+) space-add job\(s\) committed/g)].map((m) => Number(m[1]));
    console.log(`[jobs-onboarding] 1000 tenants via 2 workers: wall ${(wallMs / 1000).toFixed(1)} s, ${reloads} reload(s), batches [${batches.join(", ")}]`);
    expect(reloads).toBeLessThanOrEqual(10);
    expect(reloads).toBeGreaterThanOrEqual(4); // positive control: 1000 / batch 250 needs at least 4 generations, and the log counts them
    expect(batches.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1000);

    const st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces.length).toBe(1001);
    expect(st.inventory?.pending).toBeNull();
    expect(st.spaces.filter((s) => s.inConfig).length).toBe(1001);
    const list = parseJson<SpaceListReport>(await r.cotal(["space", "list", "--json"]));
    expect(list.spaces.filter((s) => s.state === "active").length).toBe(1001);
    for (const n of names) expect(list.spaces.find((s) => s.name === n)?.state, n).toBe("active");

    // provisioned and reachable: a cred of 20 spread-out tenants connects
    const sample = names.filter((_, i) => i % 50 === 7);
    expect(sample.length).toBe(20);
    for (const n of sample) expect(await connects(up.url, readFileSync(mintSpaceCreds({ root: r.root, space: n, user: "probe" }).path, "utf8")), n).toBe(true);

    // the worker service: health and Prometheus metrics on loopback
    expect(health).toBeTruthy();
    expect((await fetch(`${health}/healthz`)).status).toBe(200);
    // prom-client's exposition, parsed: w2's own share of the work moved its series
    const busy = await scrape(health);
    const w2Added = promValue(busy, "cotal_jobs_processed_total", { ...R, type: "space-add", outcome: "added" }) ?? 0;
    expect(w2Added).toBeGreaterThan(0);
    expect(w2Added).toBeLessThanOrEqual(1000);
    expect(promValue(busy, "cotal_batch_size_sum", R)).toBeGreaterThanOrEqual(w2Added);
    expect(promValue(busy, "cotal_batch_size_count", R)).toBeGreaterThan(0);
    expect(promValue(busy, "cotal_saga_step_seconds_count", { ...R, step: "reload-proof" })).toBeGreaterThan(0);
    expect(promValue(busy, "cotal_reloads_total", R)).toBeGreaterThan(0);
    expect(promValue(busy, "cotal_inventory_generation", R)).toBeGreaterThan(0);
    expect(promValue(busy, "cotal_inventory_applied_generation", R)).toBeGreaterThan(0);
    expect(promValue(busy, "cotal_inventory_applied_generation", R)).toBeLessThanOrEqual(promValue(busy, "cotal_inventory_generation", R) ?? 0);
    expect(promValue(busy, "cotal_jobs_active", { ...R, type: "space-add" })).toBe(0);
    expect(busy.get("process_resident_memory_bytes")?.type).toBe("gauge");

    // graceful SIGTERM drain: both exit 0
    expect(await w1.stop()).toBe(0);
    expect(await w2.stop()).toBe(0);
  });

  // An idle BullMQ 6.7 worker spends alternate seconds waiting in two places (its 1 s blocking
  // fetch times out into the other): woken inside its claim loop it claims a whole burst before
  // handing any job on; woken in its outer loop it hands the first job on at once and then claims
  // the rest, and without the hold that first job left alone (a saga and a reload of its own). So
  // each arm sends ten bursts, the gaps between them stepping through that 2 s cycle.
  it("bursts enqueued while the worker waits are one batch and one reload each; control: with --batch-hold 0 a burst's first job leaves alone", async () => {
    const BURSTS = 10;
    const SIZE = 60;
    const bursts = async (hold: string[]) => {
      const { r, redis, env } = await jobsRoot();
      // A window shorter than the claim of a burst's other jobs, so only the hold keeps one together.
      const w = worker("cli", r, redis, ["--batch-wait", "5", ...hold]);
      await w.ready();
      const before = reloadCount(r.layout);
      for (let i = 0; i < BURSTS; i++) {
        const file = join(r.root, "..", `burst-${i}.txt`);
        writeFileSync(file, `${tenantNames(SIZE, `b${i}x`).join("\n")}\n`);
        const add = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env, timeoutMs: 120_000 });
        expect(add.code, `${add.stderr}\n--- worker\n${w.log()}`).toBe(0);
        expect(parseJson<{ completed: number }>(add).completed).toBe(SIZE);
        await new Promise((res) => setTimeout(res, 200 * i));
      }
      expect(parseJson<StatusReport>(await r.cotal(["status", "--json"])).inventory?.spaces.length).toBe(1 + BURSTS * SIZE);
      const lines = [...w.log().matchAll(/batch of (\d+) space-add job\(s\) committed in \d+ ms( \(held)?/g)];
      return { batches: lines.map((m) => Number(m[1])), held: lines.filter((m) => m[2]).length, reloads: reloadCount(r.layout) - before };
    };
    const held = await bursts([]);
    const alone = await bursts(["--batch-hold", "0"]);
    console.log(`[jobs-onboarding] ${BURSTS} bursts of ${SIZE}: held ${JSON.stringify(held)}; --batch-hold 0 ${JSON.stringify(alone)}`);
    expect(held.batches).toEqual(Array(BURSTS).fill(SIZE));
    expect(held.reloads).toBe(BURSTS);
    expect(held.held).toBeGreaterThan(0); // the hold was used, not only bursts that arrived whole
    expect(alone.held).toBe(0);
    expect(alone.batches.length).toBeGreaterThan(BURSTS); // the control: without the hold some burst split
    expect(alone.reloads).toBe(alone.batches.length);
  }, 240_000);

  it("the same add enqueued twice while pending runs once; re-adding after completion is a no-op success; a bad job fails alone", async () => {
    const { r, redis, env } = await jobsRoot();
    const first = await r.cotal(["space", "add", "beta", "--queue", "--no-wait", "--json"], { env });
    expect(first.code, first.stderr).toBe(0);
    expect(parseJson<{ enqueued: number }>(first).enqueued).toBe(1);
    const second = await r.cotal(["space", "add", "beta", "--queue", "--no-wait", "--json"], { env });
    expect(second.code, second.stderr).toBe(0);
    expect(parseJson<{ enqueued: number; alreadyQueued: number }>(second)).toMatchObject({ enqueued: 0, alreadyQueued: 1 });

    // a job no CLI would enqueue (invalid name), and a good one, in the same pending set
    const q = openQueue("space-add", rootKeyFor(r.root), redis.url);
    await q.add("space-add", { root: r.root, name: "Bad Name" }, { jobId: `space-add.${rootKeyFor(r.root)}.bad`, attempts: 3 });
    await q.add("space-add", { root: r.root, name: "gamma" }, { jobId: `space-add.${rootKeyFor(r.root)}.gamma`, removeOnComplete: true });
    await q.close();
    let js = parseJson<JobsStatusReport>(await r.cotal(["jobs", "status", "--json"], { env }));
    const addQ = js.queues.find((x) => x.type === "space-add");
    expect(addQ?.queue).toBe(queueNameFor("space-add", rootKeyFor(r.root)));
    expect(addQ?.counts.waiting).toBe(3); // beta once, not twice

    const before = reloadCount(r.layout);
    const w = worker("cli", r, redis, ["--batch-wait", "300"]);
    await w.ready();
    js = await until("the queue to drain", async () => {
      const s = parseJson<JobsStatusReport>(await r.cotal(["jobs", "status", "--json"], { env }));
      const c = s.queues.find((x) => x.type === "space-add")?.counts;
      return c && c.waiting + c.active + c.delayed === 0 ? s : undefined;
    });
    const failed = js.queues.find((x) => x.type === "space-add")?.failed ?? [];
    expect(failed.map((f) => f.space)).toEqual(["Bad Name"]);
    expect(failed[0]?.reason).toMatch(/\[invalid-payload\]/);
    expect(failed[0]?.attemptsMade).toBe(1); // unrecoverable: no retries spent on it
    expect(reloadCount(r.layout) - before).toBe(1); // beta and gamma in one group commit, beta once
    let st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);

    const again = await r.cotal(["space", "add", "beta", "--queue", "--json"], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(parseJson<{ enqueued: number; completed: number }>(again)).toMatchObject({ enqueued: 1, completed: 1 });
    expect(reloadCount(r.layout) - before).toBe(1); // the re-add ran and changed nothing
    st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
    expect(w.log()).toMatch(/batch of 1 space-add job\(s\) committed/);

    // space-rm is a job type too: processed through the saga
    const rmQ = openQueue("space-rm", rootKeyFor(r.root), redis.url);
    await rmQ.add("space-rm", { root: r.root, name: "gamma" }, { jobId: `space-rm.${rootKeyFor(r.root)}.gamma`, removeOnComplete: true });
    await rmQ.close();
    await until("gamma removed", async () => parseJson<StatusReport>(await r.cotal(["status", "--json"])).inventory?.spaces.includes("gamma") === false, 30_000, 250);
    expect(await w.stop()).toBe(0);
  });

  it("worker logs are JSON lines with no seed, even from a job whose payload carries one", async () => {
    const { r, redis, env } = await jobsRoot();
    const R = { root: realpathSync(r.root) };
    // A seed-shaped token (S + U + base32) in a payload: the root-mismatch refusal quotes the root,
    // so without the scrubber it would reach the worker's failure log line.
    const seed = `SU${"B".repeat(56)}`;
    const q = openQueue("space-add", rootKeyFor(r.root), redis.url);
    await q.add("space-add", { root: `/tmp/${seed}`, name: "delta" }, { jobId: `space-add.${rootKeyFor(r.root)}.delta`, attempts: 1 });
    await q.close();
    const w = worker("app", r, redis, [], { COTAL_JOBS_BATCH_WAIT_MS: "100" });
    const health = await w.ready();
    const add = await r.cotal(["space", "add", "beta", "gamma", "--queue", "--json"], { env });
    expect(add.code, add.stderr).toBe(0);
    await until("the seed job to fail", async () => /job-failed/.test(w.log()));
    const metrics = await scrape(health);
    expect(promValue(metrics, "cotal_jobs_processed_total", { ...R, type: "space-add", outcome: "added" })).toBe(2);
    expect(promValue(metrics, "cotal_jobs_failed_total", { ...R, type: "space-add", final: "true" })).toBe(1);
    expect(await w.stop()).toBe(0);

    const log = w.log();
    const lines = log.trim().split("\n").map((l) => JSON.parse(l) as { name?: string; event?: string; msg?: string; level?: number });
    // positive controls: the work is in the log, as structured events
    expect(lines.every((l) => l.name === "cotal-worker" && typeof l.level === "number")).toBe(true);
    expect(lines.some((l) => l.event === "serving")).toBe(true);
    expect(lines.some((l) => l.event === "batch" && /committed/.test(l.msg ?? ""))).toBe(true);
    const failed = lines.find((l) => l.event === "job-failed");
    expect(failed?.msg).toMatch(/job for root \/tmp\/\[seed redacted\]/);
    expect(lines.some((l) => l.event === "drained")).toBe(true);
    // the guard: no seed prefix followed by a seed's body anywhere in the worker's output
    expect(log).not.toMatch(/(?<![A-Z2-7])S[UAO][A-Z2-7]{56}(?![A-Z2-7])/); // a seed stands alone: a public key may hold "SU…" by chance
  });

  it("without Redis, --queue and jobs verbs refuse with a next step that runs as printed; verbs without --queue still work", async () => {
    const { r } = await jobsRoot();
    const port = await freePort();
    const env = { REDIS_URL: `redis://127.0.0.1:${port}` };
    const q = await r.cotal(["space", "add", "delta", "--queue", "--no-wait"], { env });
    expect(q.code).toBe(6);
    expect(q.stderr).toMatch(/cannot reach Redis.*\[redis-unreachable\]/);
    expect((await r.cotal(["jobs", "status", "--json"], { env })).code).toBe(6);
    const direct = await r.cotal(["space", "add", "delta"], { env });
    expect(direct.code, direct.stderr).toBe(0);
    // The printed way out, verbatim from `/`: Redis on the URL's port; then the refused command goes through.
    const next = /next: (.*)/.exec(q.stderr)?.[1] ?? "";
    expect(next).toMatch(new RegExp(`^REDIS_PORT=${port} bash /\\S+/infra/redis.sh start`));
    try {
      const started = await runPrinted(next);
      expect(started.code, started.stderr).toBe(0);
      const again = await r.cotal(["space", "add", "delta", "--queue", "--no-wait"], { env }); // the refused command, as it was
      expect(again.code, again.stderr).toBe(0);
    } finally {
      await runPrinted(next.replace(/ start\b.*$/, " stop"));
    }
  });
});
