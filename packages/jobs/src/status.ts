import { requireRoot } from "@cotal/core/root";
import { openRedis, redactRedisUrl } from "./connection.js";
import { openQueue } from "./enqueue.js";
import { JOB_TYPES, PROCESSED_TYPES, rootKeyFor, type JobType } from "./names.js";
import { readSchedules, type BackupScheduleEntry } from "./schedules.js";

export const JOB_STATES = ["waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed"] as const;

export interface QueueStatus {
  type: JobType;
  queue: string;
  /** Whether a worker processes this type today (backup/restore arrive with the backup issue). */
  processed: boolean;
  counts: Record<(typeof JOB_STATES)[number], number>;
  workers: number;
  failed: { id: string; space: string | null; reason: string; attemptsMade: number; failedAt: string | null }[];
}

export interface JobsStatusReport {
  root: string;
  rootKey: string;
  redis: string;
  queues: QueueStatus[];
  /** Every backup schedule of the root with its last run and outcome (`cotal jobs schedules`). */
  schedules: BackupScheduleEntry[];
}

/** Counts per state per queue of this root, workers attached, and the failed jobs with their reasons. */
export async function jobsStatus(opts: { root: string; redisUrl: string; failedLimit?: number }): Promise<JobsStatusReport> {
  requireRoot(opts.root);
  const client = await openRedis(opts.redisUrl); // probes first: the clear "Redis is not there" error
  const rootKey = rootKeyFor(opts.root);
  const queues: QueueStatus[] = [];
  let schedules: BackupScheduleEntry[] = [];
  try {
    for (const type of JOB_TYPES) {
      const q = openQueue(type, rootKey, opts.redisUrl);
      try {
        if (type === "space-backup") schedules = await readSchedules(q, client, rootKey);
        const counts = (await q.getJobCounts(...JOB_STATES)) as QueueStatus["counts"];
        const failedJobs = counts.failed > 0 ? await q.getFailed(0, (opts.failedLimit ?? 50) - 1) : [];
        queues.push({
          type,
          queue: q.name,
          processed: (PROCESSED_TYPES as readonly string[]).includes(type),
          counts,
          workers: await q.getWorkersCount(),
          failed: failedJobs.map((j) => ({
            id: String(j.id),
            space: typeof (j.data as { name?: unknown })?.name === "string" ? (j.data as { name: string }).name : null,
            reason: j.failedReason ?? "",
            attemptsMade: j.attemptsMade,
            failedAt: j.finishedOn ? new Date(j.finishedOn).toISOString() : null,
          })),
        });
      } finally {
        await q.close().catch(() => undefined);
      }
    }
  } finally {
    client.disconnect();
  }
  return { root: opts.root, rootKey, redis: redactRedisUrl(opts.redisUrl), queues, schedules };
}
