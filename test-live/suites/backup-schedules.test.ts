import { cpSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, parsePromText, promValue, tempRoot } from "@cotal/harness";
import { openQueue, type BackupScheduleEntry, type BackupSchedulesReport, type JobsStatusReport } from "@cotal/jobs";
import { readTenantData, renderTenantPage } from "@cotal/dashboard";
import { AppClient } from "../fixtures/app-client.js";
import { startRedis, startWorker, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await disposeLiveRoots();
});
afterAll(harnessTeardown);

async function redisOf(): Promise<LiveRedis> {
  const redis = await startRedis();
  cleanups.push(() => redis.stop());
  return redis;
}

async function tempDir(prefix: string): Promise<string> {
  const t = await tempRoot(prefix);
  cleanups.push(() => t.cleanup());
  return t.path;
}

function worker(r: LiveRoot, redis: LiveRedis): LiveWorker {
  const w = startWorker("cli", { root: r.root, redisUrl: redis.url, env: { COTAL_WORKER_METRICS_PORT: "0" } });
  cleanups.push(() => w.kill());
  return w;
}

async function schedules(r: LiveRoot, env: Record<string, string>): Promise<BackupScheduleEntry[]> {
  return parseJson<BackupSchedulesReport>(await r.cotal(["jobs", "schedules", "--json"], { env })).schedules;
}

/** Until alpha's schedule records a run with this outcome (and, if given, an error message matching `why`). */
async function untilRun(r: LiveRoot, env: Record<string, string>, outcome: "succeeded" | "failed", why?: RegExp): Promise<BackupScheduleEntry> {
  return until(`a ${outcome} scheduled run`, async () => {
    const s = (await schedules(r, env)).find((x) => x.space === "alpha");
    return s?.lastRun?.outcome === outcome && (!why || why.test(s.lastRun.error?.message ?? "")) ? s : undefined;
  }, 60_000, 300);
}

async function lastSuccessMetric(healthUrl: string, root: string, space: string): Promise<number | undefined> {
  const text = await (await fetch(`${healthUrl}/metrics`)).text();
  return promValue(parsePromText(text), "cotal_backup_last_success_timestamp_seconds", { root: realpathSync(root), space });
}

const keysOf = async (redis: LiveRedis) => (await redis.cli("--scan", "--pattern", "*")).split("\n").filter(Boolean);

describe("backup directories checked before anything is scheduled or enqueued (issue #29)", () => {
  it("a bad --out for --every … --queue and a bad --from for restore --queue are refused exit 8 [io] with nothing in Redis; a good one schedules", async () => {
    const { r } = await upRoot();
    const redis = await redisOf();
    const env = { REDIS_URL: redis.url };
    const dir = await tempDir("cotal-sched-out-");
    writeFileSync(join(dir, "file"), "not a directory");

    const onFile = await r.cotal(["space", "backup", "alpha", "--out", join(dir, "file"), "--every", "1d", "--queue"], { env });
    expect(onFile.code, onFile.stderr).toBe(8);
    expect(onFile.stderr).toMatch(/is not a directory.*\[io\]/);
    expect(onFile.stderr).toContain(`next: cotal --root ${r.root} space backup alpha --out ${join(dir, "file")}.1 --every 1d --queue`);
    const underFile = await r.cotal(["space", "backup", "alpha", "--out", join(dir, "file", "sub"), "--every", "1d", "--queue", "--json"], { env });
    expect(underFile.code).toBe(8);
    expect(parseJson<{ error: { code: string; details: { reason: string } } }>(underFile).error).toMatchObject({ code: "io", details: { reason: "not-a-directory" } });
    const missing = await r.cotal(["space", "restore", "alpha", "--from", join(dir, "nope"), "--queue"], { env });
    expect(missing.code, missing.stderr).toBe(8);
    expect(missing.stderr).toMatch(/nope cannot be read \(ENOENT\).*\[io\]/);
    expect(await keysOf(redis), "nothing reached Redis").toEqual([]);

    // the positive control: a directory that does not exist yet but can be created schedules
    const good = await r.cotal(["space", "backup", "alpha", "--out", join(dir, "backups"), "--every", "1d", "--queue"], { env });
    expect(good.code, good.stderr).toBe(0);
    expect((await schedules(r, env)).map((s) => [s.space, s.out, s.cadence])).toEqual([["alpha", join(dir, "backups"), "every 86400s"]]);
  });

  it("a schedule whose directory became a regular file records a failed run with the io error and never touches the tenant; list, jobs status and the dashboard show it; unschedule removes it", async () => {
    const { r, up } = await upRoot();
    const redis = await redisOf();
    const env = { REDIS_URL: redis.url };
    const app = await AppClient.start(up.url, await credsText(r, "alpha"), "alpha");
    cleanups.push(() => app.stop());
    const base = await tempDir("cotal-sched-fail-");
    const out = join(base, "backups");
    mkdirSync(out);
    expect((await r.cotal(["space", "backup", "alpha", "--out", out, "--every", "2s", "--keep", "2", "--queue"], { env })).code).toBe(0);
    const w = worker(r, redis);
    await w.ready();
    // the positive control: the schedule works while its directory does
    const ok = await untilRun(r, env, "succeeded");

    // A run in flight meanwhile may fail mid-write (its own io error); the cell waits for a run that the check refused.
    rmSync(out, { recursive: true });
    writeFileSync(out, "a file where the backups went");
    const failed = await untilRun(r, env, "failed", /is not a directory; scheduled backups write/);
    expect(failed.lastRun?.error?.code).toBe("io");
    expect(failed.lastRun?.error?.message).toBe(`scheduled backup of alpha: ${out} is not a directory; scheduled backups write dated artifact directories into it; nothing was changed`);
    expect(failed.lastRun?.error?.next).toBe(`cotal --root ${r.root} space backup alpha --out ${out}.1 --every 2s --keep 2 --queue`);
    expect(failed.lastSuccess?.at, "the last success is kept beside the failure").toBe(ok.lastRun?.at);
    const st = await statusOf(r);
    expect([st.journal, st.quiesced]).toEqual([null, []]);
    await app.writable();
    expect([app.report.disconnects, app.report.closed], "the application never lost its connection").toEqual([[], false]);

    const text = await r.cotal(["jobs", "schedules"], { env });
    expect(text.stdout).toMatch(/alpha: every 2s into .*\n {2}last run FAILED at .*\[io\] .* is not a directory/);
    const js = parseJson<JobsStatusReport>(await r.cotal(["jobs", "status", "--json"], { env }));
    expect(js.schedules.find((s) => s.space === "alpha")?.lastRun?.outcome).toBe("failed");
    const page = renderTenantPage(await readTenantData({ root: r.root, redisUrl: redis.url }));
    expect(page).toContain("last run FAILED");
    expect(page).not.toContain("none recorded");

    const rm = await r.cotal(["jobs", "unschedule", "alpha"], { env });
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toMatch(/removed the backup schedule of alpha/);
    expect(await schedules(r, env)).toEqual([]);
    const again = await r.cotal(["jobs", "unschedule", "alpha", "--json"], { env });
    expect(parseJson<{ outcome: string }>(again).outcome).toBe("absent");
    const bad = await r.cotal(["jobs", "unschedule", "Not_A_Space"], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/\[invalid-space-name\]/);
  });

  it("space rm removes the removed tenant's schedule (direct and through a worker), keeps the others', and with Redis down is a success with a note", async () => {
    const { r } = await upRoot();
    const redis = await redisOf();
    const env = { REDIS_URL: redis.url };
    expect((await r.cotal(["space", "add", "beta", "gamma", "delta"])).code).toBe(0);
    const out = await tempDir("cotal-sched-rm-");
    for (const s of ["alpha", "beta", "gamma", "delta"]) expect((await r.cotal(["space", "backup", s, "--out", join(out, s), "--every", "1d", "--queue"], { env })).code).toBe(0);

    const direct = await r.cotal(["space", "rm", "beta", "--yes"], { env });
    expect(direct.code, direct.stderr).toBe(0);
    expect(direct.stdout).toMatch(/removed its backup schedule\(s\): space-backup\.\S+\.beta\.schedule/);
    expect((await schedules(r, env)).map((s) => s.space)).toEqual(["alpha", "delta", "gamma"]);

    const w = worker(r, redis);
    await w.ready();
    const queued = await r.cotal(["space", "rm", "gamma", "--yes", "--queue"], { env });
    expect(queued.code, queued.stderr).toBe(0);
    expect((await schedules(r, env)).map((s) => s.space), "the others' schedules stay").toEqual(["alpha", "delta"]);

    const down = { REDIS_URL: "redis://127.0.0.1:1" };
    const noted = await r.cotal(["space", "rm", "delta", "--yes"], { env: down });
    expect(noted.code, noted.stderr).toBe(0);
    expect(noted.stdout).toMatch(/removed space delta/);
    expect(noted.stderr).toMatch(/note: space delta is removed, but its backup schedules could not be: cannot reach Redis/);
    expect(noted.stderr).toContain(`next: cotal --root ${r.root} jobs unschedule delta`);
    expect((await schedules(r, env)).map((s) => s.space), "left in Redis, as the note says").toEqual(["alpha", "delta"]);
    expect((await r.cotal(["jobs", "unschedule", "delta"], { env })).code).toBe(0);
    expect((await schedules(r, env)).map((s) => s.space)).toEqual(["alpha"]);
  });

  it("cotal_backup_last_success_timestamp_seconds: absent before a success, set by one, recovered by a restarted worker", async () => {
    const { r } = await upRoot();
    const redis = await redisOf();
    const env = { REDIS_URL: redis.url };
    const out = await tempDir("cotal-sched-metric-");
    const t0 = Date.now() / 1000;
    const first = worker(r, redis);
    const health = await first.ready();
    expect(health).toBeDefined();
    expect(await lastSuccessMetric(health as string, r.root, "alpha"), "the positive control: no success yet, no series").toBeUndefined();
    expect((await r.cotal(["space", "backup", "alpha", "--out", out, "--every", "2s", "--queue"], { env })).code).toBe(0);
    const ok = await untilRun(r, env, "succeeded");
    const value = await until("the metric", () => lastSuccessMetric(health as string, r.root, "alpha"), 10_000, 200);
    expect(value).toBeGreaterThanOrEqual(Math.floor(t0));
    expect(value).toBeLessThanOrEqual(Date.now() / 1000);
    expect((value ?? 0) * 1000).toBeGreaterThanOrEqual(Date.parse(ok.lastSuccess?.at ?? "") - 1);
    expect(await first.stop()).toBe(0);

    // The scheduler goes (BullMQ's own call: unschedule would also drop the records), so no run after
    // this moves the series: a restarted worker can only have it from the run records in Redis.
    const list = parseJson<BackupSchedulesReport>(await r.cotal(["jobs", "schedules", "--json"], { env }));
    const q = openQueue("space-backup", list.rootKey, redis.url);
    await q.removeJobScheduler(list.schedules[0]?.schedulerId ?? "").finally(() => q.close());
    const recorded = JSON.parse(await redis.cli("hget", `cotal:backup-runs.${list.rootKey}:last-success`, "alpha")) as { at: string };
    const second = worker(r, redis);
    const health2 = await second.ready();
    expect(await lastSuccessMetric(health2 as string, r.root, "alpha")).toBe(Date.parse(recorded.at) / 1000);
  });
});

describe("cotal backup verify", () => {
  it("passes a good artifact, naming its space, account and streams, and refuses one with a flipped byte (exit 3 [artifact-invalid])", async () => {
    const { r } = await upRoot();
    const dir = await tempDir("cotal-verify-");
    const good = join(dir, "alpha");
    expect((await r.cotal(["space", "backup", "alpha", "--out", good])).code).toBe(0);

    const ok = await r.cotal(["backup", "verify", good, "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
    const report = parseJson<{ valid: boolean; space: string; accountPublicKey: string; streams: { name: string; file: string; verified: boolean; messages: number }[] }>(ok);
    expect([report.valid, report.space]).toEqual([true, "alpha"]);
    expect(report.accountPublicKey).toMatch(/^A[A-Z2-7]{55}$/);
    expect(report.streams.length).toBeGreaterThan(0);
    expect(report.streams.every((s) => s.verified)).toBe(true);
    const text = await r.cotal(["backup", "verify", good]);
    expect(text.stdout).toMatch(new RegExp(`is a valid backup of space alpha \\(account ${report.accountPublicKey}\\)`));

    const bad = join(dir, "tampered");
    cpSync(good, bad, { recursive: true });
    const file = join(bad, report.streams[0]?.file ?? "");
    const bytes = readFileSync(file);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    writeFileSync(file, bytes);
    const refused = await r.cotal(["backup", "verify", bad]);
    expect(refused.code, refused.stdout).toBe(3);
    expect(refused.stderr).toMatch(/does not match its pinned sha256.*\[artifact-invalid\]/);
    expect(refused.stderr).toContain(`next: cotal --root ${r.root} space backup alpha --out ${bad}.fresh`);
    const asJson = await r.cotal(["backup", "verify", bad, "--json"]);
    expect(parseJson<{ error: { code: string } }>(asJson).error.code).toBe("artifact-invalid");
    const gone = await r.cotal(["backup", "verify", join(dir, "nope")]);
    expect(gone.code).toBe(8);
    expect(gone.stderr).toMatch(/\[io\]/);
  });
});
