import type { Redis } from "ioredis";
import { openRedis } from "./connection.js";
import { CotalError } from "@cotal/core/errors";
import { QUEUE_PREFIX } from "./names.js";

export interface TrackProgress {
  total: number;
  /** Completed and removed (removeOnComplete), or gone from Redis. */
  finished: number;
  failed: number;
  pending: number;
}

export interface TrackResult {
  /** Ids whose job is gone from Redis: completed (removeOnComplete) — or lost; the caller checks the KV. */
  gone: string[];
  failed: { id: string; reason: string }[];
  elapsedMs: number;
}

export interface TrackOptions {
  redisUrl: string;
  queue: string;
  ids: readonly string[];
  pollMs?: number;
  timeoutMs?: number;
  onProgress?: (p: TrackProgress) => void;
}

/**
 * Follows a set of jobs until none is pending, by reading their hashes (one pipeline per tick; no
 * event stream to miss). A job retrying after a failed attempt is still pending.
 */
export async function trackJobs(opts: TrackOptions): Promise<TrackResult> {
  const client = await openRedis(opts.redisUrl);
  const t0 = Date.now();
  const remaining = new Set(opts.ids);
  const gone: string[] = [];
  const failed: TrackResult["failed"] = [];
  const key = (id: string) => `${QUEUE_PREFIX}:${opts.queue}:${id}`;
  try {
    for (;;) {
      await tick(client, [...remaining], key, `${QUEUE_PREFIX}:${opts.queue}:failed`, (id, outcome, reason) => {
        remaining.delete(id);
        if (outcome === "failed") failed.push({ id, reason: reason ?? "" });
        else gone.push(id);
      });
      opts.onProgress?.({ total: opts.ids.length, finished: gone.length, failed: failed.length, pending: remaining.size });
      if (remaining.size === 0) return { gone, failed, elapsedMs: Date.now() - t0 };
      if (opts.timeoutMs !== undefined && Date.now() - t0 > opts.timeoutMs) {
        throw new CotalError("timeout", `${remaining.size} of ${opts.ids.length} job(s) still pending after ${Math.round((Date.now() - t0) / 1000)} s; they keep running`, {
          next: "cotal jobs status   # is a worker running? start one with: cotal worker",
          details: { pending: remaining.size, finished: gone.length, failed },
        });
      }
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 500));
    }
  } finally {
    client.disconnect();
  }
}

async function tick(client: Redis, ids: string[], key: (id: string) => string, failedSet: string, done: (id: string, outcome: "gone" | "failed" | "completed", reason?: string) => void): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const pipe = client.pipeline();
    for (const id of chunk) {
      pipe.hmget(key(id), "timestamp", "finishedOn", "failedReason");
      pipe.zscore(failedSet, id);
    }
    const res = (await pipe.exec()) ?? [];
    chunk.forEach((id, j) => {
      const [, fields] = res[2 * j] ?? [];
      const [, score] = res[2 * j + 1] ?? [];
      const [timestamp, finishedOn, failedReason] = (fields as (string | null)[] | undefined) ?? [];
      if (!timestamp) done(id, "gone");
      else if (score !== null && score !== undefined) done(id, "failed", failedReason ?? "");
      else if (finishedOn) done(id, "completed");
    });
  }
}
