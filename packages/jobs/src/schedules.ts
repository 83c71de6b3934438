import { requireRoot } from "@cotal/core/root";
import { assertSpaceName, GUARDS_ON, type Guards } from "@cotal/core/light";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { openRedis, probeRedis, redactRedisUrl } from "./connection.js";
import { openQueue } from "./enqueue.js";
import { jobIdFor, QUEUE_PREFIX, rootKeyFor } from "./names.js";

/** One scheduled run as the worker recorded it (backup-run.ts): what the list, `jobs status` and the dashboard show. */
export interface BackupRun {
  /** When the run ended (ISO). */
  at: string;
  outcome: "succeeded" | "skipped" | "failed";
  jobId: string | null;
  artifact: string | null;
  bytes: number | null;
  /** skipped: the quiesce it found; failed: the error's message. */
  reason: string | null;
  error: { code: string; message: string; next: string | null } | null;
}

export interface BackupSuccess {
  at: string;
  artifact: string;
  bytes: number | null;
}

export interface BackupScheduleEntry {
  space: string;
  schedulerId: string;
  /** `every 3600s` or `cron 0 3 * * *`. */
  cadence: string;
  /** The directory dated artifacts go into. */
  out: string | null;
  keep: number | null;
  next: string | null;
  lastRun: BackupRun | null;
  lastSuccess: BackupSuccess | null;
}

export interface BackupSchedulesReport {
  root: string;
  rootKey: string;
  redis: string;
  schedules: BackupScheduleEntry[];
}

/**
 * Run records live beside the queue, not in its jobs: BullMQ keeps the last 50 finished jobs of the
 * whole queue, so a busy root would forget a quiet tenant's last run; one hash field per space never does.
 */
export function backupRunKeys(rootKey: string): { lastRun: string; lastSuccess: string } {
  const base = `${QUEUE_PREFIX}:backup-runs.${rootKey}`;
  return { lastRun: `${base}:last-run`, lastSuccess: `${base}:last-success` };
}

/** Records one finished run (and, if it succeeded, the space's last success) in one MULTI. */
export async function recordBackupRun(client: Redis, rootKey: string, space: string, run: BackupRun): Promise<void> {
  const keys = backupRunKeys(rootKey);
  const tx = client.multi().hset(keys.lastRun, space, JSON.stringify(run));
  if (run.outcome === "succeeded" && run.artifact !== null) tx.hset(keys.lastSuccess, space, JSON.stringify({ at: run.at, artifact: run.artifact, bytes: run.bytes } satisfies BackupSuccess));
  await tx.exec();
}

function parsed<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined; // a hand-edited field: shown as no record rather than failing the whole list
  }
}

export async function readBackupRuns(client: Redis, rootKey: string): Promise<{ lastRun: Map<string, BackupRun>; lastSuccess: Map<string, BackupSuccess> }> {
  const keys = backupRunKeys(rootKey);
  const [runs, successes] = await Promise.all([client.hgetall(keys.lastRun), client.hgetall(keys.lastSuccess)]);
  const map = <T>(o: Record<string, string>) => new Map(Object.entries(o).flatMap(([k, v]) => (parsed<T>(v) ? [[k, parsed<T>(v) as T] as const] : [])));
  return { lastRun: map<BackupRun>(runs), lastSuccess: map<BackupSuccess>(successes) };
}

function cadenceOf(pattern: string | undefined, every: number | undefined): string {
  if (pattern) return `cron ${pattern}`;
  return every ? `every ${every / 1000}s` : "?";
}

/** Every backup scheduler of the queue, with its space's last run and last success; sorted by space. */
export async function readSchedules(queue: Queue, client: Redis, rootKey: string): Promise<BackupScheduleEntry[]> {
  const [schedulers, runs] = await Promise.all([queue.getJobSchedulers(0, -1, true), readBackupRuns(client, rootKey)]);
  const out: BackupScheduleEntry[] = [];
  for (const sc of schedulers) {
    const data = (sc.template?.data ?? {}) as { name?: unknown; out?: unknown; keep?: unknown };
    if (typeof data.name !== "string") continue;
    out.push({
      space: data.name,
      schedulerId: sc.key,
      cadence: cadenceOf(sc.pattern, sc.every),
      out: typeof data.out === "string" ? data.out : null,
      keep: typeof data.keep === "number" ? data.keep : null,
      next: sc.next ? new Date(sc.next).toISOString() : null,
      lastRun: runs.lastRun.get(data.name) ?? null,
      lastSuccess: runs.lastSuccess.get(data.name) ?? null,
    });
  }
  return out.sort((a, b) => (a.space < b.space ? -1 : a.space > b.space ? 1 : 0));
}

function assertRoot(root: string): void {
  requireRoot(root);
}

/** `cotal jobs schedules`: every backup schedule of this root. */
export async function listSchedules(opts: { root: string; redisUrl: string }): Promise<BackupSchedulesReport> {
  assertRoot(opts.root);
  const client = await openRedis(opts.redisUrl);
  const rootKey = rootKeyFor(opts.root);
  const queue = openQueue("space-backup", rootKey, opts.redisUrl);
  try {
    return { root: opts.root, rootKey, redis: redactRedisUrl(opts.redisUrl), schedules: await readSchedules(queue, client, rootKey) };
  } finally {
    await queue.close().catch(() => undefined);
    client.disconnect();
  }
}

export interface UnscheduleResult {
  space: string;
  /** "absent": there was no schedule of this space; nothing changed. */
  outcome: "removed" | "absent";
  schedulers: string[];
  /** Runs the schedule had already queued that had not started (an active one finishes). */
  droppedJobs: number;
}

/**
 * `cotal jobs unschedule <space>` and `space rm`: removes every backup scheduler of `space` (the one
 * `space backup --every` upserts, and any other whose job names it), the runs they queued that have
 * not started, and the space's run records. Idempotent: an absent schedule is a no-op success.
 */
export async function unscheduleBackup(opts: { root: string; space: string; redisUrl: string; guards?: Guards }): Promise<UnscheduleResult> {
  const space = assertSpaceName(opts.space, opts.guards ?? GUARDS_ON);
  assertRoot(opts.root);
  await probeRedis(opts.redisUrl);
  const rootKey = rootKeyFor(opts.root);
  const queue = openQueue("space-backup", rootKey, opts.redisUrl);
  const client = await openRedis(opts.redisUrl);
  try {
    const ours = jobIdFor("space-backup", rootKey, space, "schedule");
    const named = (await queue.getJobSchedulers(0, -1, true)).filter((sc) => (sc.template?.data as { name?: unknown } | undefined)?.name === space).map((sc) => sc.key);
    const ids = [...new Set([ours, ...named])];
    const schedulers: string[] = [];
    for (const id of ids) if (await queue.removeJobScheduler(id)) schedulers.push(id);
    let droppedJobs = 0;
    for (const job of await queue.getJobs(["waiting", "prioritized", "delayed"])) {
      if (job && job.repeatJobKey !== undefined && ids.includes(job.repeatJobKey)) {
        await job.remove().catch(() => undefined); // taken by a worker meanwhile: that one run finishes
        droppedJobs++;
      }
    }
    const keys = backupRunKeys(rootKey);
    await client.multi().hdel(keys.lastRun, space).hdel(keys.lastSuccess, space).exec();
    return { space, outcome: schedulers.length > 0 ? "removed" : "absent", schedulers, droppedJobs };
  } finally {
    await queue.close().catch(() => undefined);
    client.disconnect();
  }
}
