import { requireRoot } from "@cotal/core/root";
import { checkScheduleDir, spaceStoreBytes } from "@cotal/core";
import { probeRedis } from "./connection.js";
import { openQueue } from "./enqueue.js";
import { CotalError } from "@cotal/core/errors";
import { rootKeyFor, jobIdFor } from "./names.js";
import { parsePayload } from "./payloads.js";

export interface ScheduleBackupOptions {
  root: string;
  space: string;
  /** Parent directory: each run writes `<out>/<space>-<timestamp>/`. */
  out: string;
  /** A cron pattern (5 or 6 fields) or a duration (`90s`, `15m`, `6h`, `1d`). */
  every: string;
  /** How many complete artifacts to keep (oldest pruned after each run). */
  keep: number;
  redisUrl: string;
}

export interface ScheduledBackup {
  schedulerId: string;
  /** The directory dated artifacts go into, absolute. */
  out: string;
  queue: string;
  repeat: { pattern: string } | { every: number };
  next: string | null;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--every`: a duration becomes a fixed interval, anything else is handed to BullMQ as a cron pattern. */
export function parseEvery(every: string): { pattern: string } | { every: number } {
  const d = /^(\d+)([smhd])$/.exec(every.trim());
  if (d?.[1] && d[2]) {
    const ms = Number(d[1]) * (UNITS[d[2]] ?? 0);
    if (ms < 1_000) throw new CotalError("invalid-payload", "--every must be at least 1s");
    return { every: ms };
  }
  if (every.trim().split(/\s+/).length < 5) {
    throw new CotalError("invalid-payload", `--every ${JSON.stringify(every)} is neither a duration (30m, 6h, 1d) nor a cron pattern ("0 3 * * *")`);
  }
  return { pattern: every.trim() };
}

/**
 * Upserts one BullMQ job scheduler per (root, space): running the command again replaces the cadence
 * instead of adding a second schedule, and workers never create schedules at boot.
 */
export async function scheduleBackup(opts: ScheduleBackupOptions): Promise<ScheduledBackup> {
  requireRoot(opts.root);
  const repeat = parseEvery(opts.every);
  const payload = parsePayload("space-backup", { root: opts.root, name: opts.space, out: opts.out, keep: opts.keep, every: opts.every });
  // Before Redis hears of it: a directory no run could write into is refused now, not at every run.
  payload.out = checkScheduleDir(opts.out, { space: payload.name, needBytes: spaceStoreBytes(opts.root, payload.name), root: opts.root });
  await probeRedis(opts.redisUrl);
  const rootKey = rootKeyFor(opts.root);
  const queue = openQueue("space-backup", rootKey, opts.redisUrl);
  try {
    const schedulerId = jobIdFor("space-backup", rootKey, opts.space, "schedule");
    const job = await queue.upsertJobScheduler(schedulerId, repeat, {
      name: "space-backup",
      data: payload,
      // One attempt: a backup stops the broker, so a failed run waits for its next slot, not a retry storm.
      opts: { attempts: 1, removeOnComplete: { count: 50 }, removeOnFail: { count: 50 } },
    });
    const next = job?.opts?.delay !== undefined && job.timestamp ? new Date(job.timestamp + job.opts.delay).toISOString() : null;
    return { schedulerId, queue: queue.name, out: payload.out, repeat, next };
  } finally {
    await queue.close().catch(() => undefined);
  }
}
