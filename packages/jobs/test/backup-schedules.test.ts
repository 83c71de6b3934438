import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parsePromText, promValue } from "@cotal/harness";
import { describeError } from "@cotal/core";
import { backupRunKeys, openQueue, readBackupRuns, recordBackupRun, rootKeyFor, runScheduledBackup, scheduleBackup, unscheduleBackup, WorkerMetrics, type BackupRun } from "../src/index.js";

const REDIS = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const dirs: string[] = [];
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-sched-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function redisUp(): Promise<boolean> {
  const c = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  c.on("error", () => undefined);
  try {
    await c.connect();
    return (await c.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}
const noRedis = !(await redisUp());
const client = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 1 });
client.on("error", () => undefined);
afterAll(() => client.disconnect());

function refusalOf(p: Promise<unknown>): Promise<ReturnType<typeof describeError>> {
  return p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (e: unknown) => describeError(e),
  );
}

describe("a directory no run could write into is refused before Redis is asked", () => {
  it("scheduleBackup: io (exit 8) naming the path, even with Redis unreachable (the check comes first)", async () => {
    const root = temp();
    mkdirSync(join(root, "auth")); // a root (the root check comes before the directory's)
    writeFileSync(join(root, "file"), "x");
    const e = await refusalOf(scheduleBackup({ root, space: "alpha", out: join(root, "file"), every: "1d", keep: 2, redisUrl: "redis://127.0.0.1:1" }));
    expect([e.code, e.exit]).toEqual(["io", 8]);
    expect(e.message).toContain(join(root, "file"));
    // the positive control: a good directory gets past the check and meets the unreachable Redis
    expect((await refusalOf(scheduleBackup({ root, space: "alpha", out: join(root, "dir"), every: "1d", keep: 2, redisUrl: "redis://127.0.0.1:1" }))).code).toBe("redis-unreachable");
  });

  it("runScheduledBackup: the run fails io before anything else, its next the fix then the scheduling command", async () => {
    const root = temp();
    writeFileSync(join(root, "file"), "x");
    const e = await refusalOf(runScheduledBackup({ root, name: "alpha", out: join(root, "file"), every: "1d", keep: 2 }));
    expect(e.code).toBe("io");
    expect(e.message).toMatch(/^scheduled backup of alpha: .*is not a directory/);
    expect(e.next).toBe(`cotal --root ${root} space backup alpha --out ${join(root, "file")}.1 --every 1d --keep 2 --queue`);
    // the positive control: a good directory passes the check and the run goes on to need a running broker
    expect((await refusalOf(runScheduledBackup({ root, name: "alpha", out: join(root, "dir"), every: "1d", keep: 2 }))).code).toBe("broker-not-running");
  });
});

describe.skipIf(noRedis)("run records and unschedule (Redis at REDIS_URL or 127.0.0.1:6379)", () => {
  const run = (at: string, outcome: BackupRun["outcome"], extra: Partial<BackupRun> = {}): BackupRun => ({ at, outcome, jobId: "j", artifact: null, bytes: null, reason: null, error: null, ...extra });

  it("keeps each space's last run and last success apart: a failure after a success keeps the success", async () => {
    const rootKey = rootKeyFor(temp());
    await recordBackupRun(client, rootKey, "alpha", run("2030-01-01T00:00:00.000Z", "succeeded", { artifact: "/b/a-1", bytes: 10 }));
    await recordBackupRun(client, rootKey, "alpha", run("2030-01-02T00:00:00.000Z", "failed", { reason: "x", error: { code: "io", message: "x", next: null } }));
    const r = await readBackupRuns(client, rootKey);
    expect(r.lastRun.get("alpha")?.outcome).toBe("failed");
    expect(r.lastSuccess.get("alpha")).toEqual({ at: "2030-01-01T00:00:00.000Z", artifact: "/b/a-1", bytes: 10 });
    await client.del(...Object.values(backupRunKeys(rootKey)));
  });

  it("unschedule removes the scheduler and the space's records; again it is a no-op success", async () => {
    const root = temp();
    mkdirSync(join(root, "auth")); // a root: scheduleBackup refuses root-missing first
    const rootKey = rootKeyFor(root);
    await scheduleBackup({ root, space: "alpha", out: join(root, "b"), every: "1d", keep: 2, redisUrl: REDIS });
    await scheduleBackup({ root, space: "beta", out: join(root, "b"), every: "1d", keep: 2, redisUrl: REDIS });
    await recordBackupRun(client, rootKey, "alpha", run("2030-01-01T00:00:00.000Z", "succeeded", { artifact: "/b/a-1" }));
    const first = await unscheduleBackup({ root, space: "alpha", redisUrl: REDIS });
    expect(first.outcome).toBe("removed");
    const q = openQueue("space-backup", rootKey, REDIS);
    try {
      expect((await q.getJobSchedulers(0, -1)).map((s) => (s.template?.data as { name: string }).name)).toEqual(["beta"]);
    } finally {
      await q.close();
    }
    expect((await readBackupRuns(client, rootKey)).lastSuccess.has("alpha")).toBe(false);
    expect((await unscheduleBackup({ root, space: "alpha", redisUrl: REDIS })).outcome).toBe("absent");
    expect((await unscheduleBackup({ root, space: "beta", redisUrl: REDIS })).outcome).toBe("removed");
    const gone = openQueue("space-backup", rootKey, REDIS);
    await gone.obliterate({ force: true }).finally(() => gone.close());
  });
});

describe("cotal_backup_last_success_timestamp_seconds", () => {
  const scrape = async (m: WorkerMetrics) => parsePromText(await m.render());
  it("moves forward with successes, never back, and follows the run records on sync", async () => {
    const m = new WorkerMetrics();
    expect(promValue(await scrape(m), "cotal_backup_last_success_timestamp_seconds", { root: "/r", space: "alpha" })).toBeUndefined();
    m.backupSucceeded("/r", "alpha", 2_000_000);
    m.backupSucceeded("/r", "alpha", 1_000_000);
    expect(promValue(await scrape(m), "cotal_backup_last_success_timestamp_seconds", { root: "/r", space: "alpha" })).toBe(2000);
    // a restart: recovered from the records, not absent
    const restarted = new WorkerMetrics();
    restarted.syncBackupSuccesses("/r", new Map([["alpha", 2_000_000], ["beta", 3_000_000]]), 5_000_000);
    expect(promValue(await scrape(restarted), "cotal_backup_last_success_timestamp_seconds", { root: "/r", space: "beta" })).toBe(3000);
    // alpha's records went (unschedule); a success recorded while the read was in flight stays
    restarted.backupSucceeded("/r", "gamma", 6_000_000);
    restarted.syncBackupSuccesses("/r", new Map([["beta", 3_000_000]]), 5_500_000);
    const after = await scrape(restarted);
    expect(promValue(after, "cotal_backup_last_success_timestamp_seconds", { root: "/r", space: "alpha" })).toBeUndefined();
    expect(promValue(after, "cotal_backup_last_success_timestamp_seconds", { root: "/r", space: "gamma" })).toBe(6000);
  });
});
