import { spaceUsages, type SpaceUsageRow } from "@cotal/core";
import { type Guards, within } from "@cotal/core/light";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { JOB_TYPES, QUEUE_PREFIX, queueNameFor, rootKeyFor, type JobType } from "./names.js";
import type { RootSnapshot } from "./root-exporter.js";
import { readBackupRuns } from "./schedules.js";
import { JOB_STATES } from "./status.js";

/**
 * The reads behind one root snapshot (root-exporter.ts): the core's own read verbs for states and
 * usage (`spaceUsages`: status, the records, `space info`'s reader), and with a Redis URL the
 * queues' counts and the backup run records. Redis is read fail-fast (no offline queue, a command
 * timeout), so a down Redis costs a scrape a second, not a pile of waiting commands.
 */
export interface RootReadsOptions {
  /** The root's real path (the `root` label and the queues' key). */
  root: string;
  guards?: Guards;
  /** Without one, no queue or backup series (`cotal metrics` without --redis-url). */
  redisUrl?: string;
  /** Accounts whose usage is read at once (default 8). */
  concurrency?: number;
  /**
   * Each space's usage is read again at most this often (default 60 s): one connection per account,
   * where states and quotas are one status read. A snapshot between takes the last usage read.
   */
  usageMaxAgeMs?: number;
  now?: () => number;
}

export interface RootReads {
  read(): Promise<RootSnapshot>;
  close(): Promise<void>;
}

const REDIS_TIMEOUT_MS = 1_000;
/** A Redis round (counts and run records) that has not answered by then is reported unread; BullMQ waits for a connection. */
const REDIS_ROUND_MS = 2_000;

export function rootReads(opts: RootReadsOptions): RootReads {
  const redis = opts.redisUrl ? boundedRound(redisReads(opts.redisUrl, rootKeyFor(opts.root))) : undefined;
  const now = opts.now ?? Date.now;
  let usage: { at: number; bySpace: Map<string, SpaceUsageRow["usage"]>; unread: number } | undefined;
  return {
    async read() {
      const fresh = !usage || now() - usage.at >= (opts.usageMaxAgeMs ?? 60_000);
      const at = now();
      const [u, r] = await Promise.all([
        spaceUsages({ root: opts.root, usage: fresh, ...(opts.guards ? { guards: opts.guards } : {}), ...(opts.concurrency ? { concurrency: opts.concurrency } : {}) }),
        redis?.read().catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))),
      ]);
      if (fresh) usage = { at, bySpace: new Map(u.spaces.map((x) => [x.space, x.usage])), unread: u.unread.length };
      const spaces = fresh ? u.spaces : u.spaces.map((x) => ({ ...x, usage: usage?.bySpace.get(x.space) ?? null }));
      const ok = r && !(r instanceof Error) ? r : undefined;
      return { rootState: u.status.state, spaces, usageUnread: usage?.unread ?? 0, queues: ok?.queues ?? null, backups: ok?.backups ?? null, redisError: r instanceof Error ? r.message : null };
    },
    close: async () => redis?.close(),
  };
}

type RedisRound = { read(): Promise<Pick<RootSnapshot, "queues" | "backups">>; close(): Promise<void> };

/**
 * A Redis round bounded in time, and never two at once: while Redis is down BullMQ's calls wait for
 * a connection, so a round that did not answer is reported at once and the next waits for it to end.
 */
function boundedRound(inner: RedisRound): RedisRound {
  let pending: Promise<unknown> | undefined;
  return {
    read() {
      if (pending) return Promise.reject(new Error("the previous Redis read has not answered yet"));
      const round = inner.read();
      pending = round.then(
        () => (pending = undefined),
        () => (pending = undefined),
      );
      return within(round, REDIS_ROUND_MS, `Redis did not answer within ${REDIS_ROUND_MS} ms`);
    },
    close: () => inner.close(),
  };
}

function redisReads(url: string, rootKey: string): RedisRound {
  const connection = { url, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: REDIS_TIMEOUT_MS, connectTimeout: 3_000 };
  const queues = JOB_TYPES.map((type) => {
    const q = new Queue(queueNameFor(type, rootKey), { connection, prefix: QUEUE_PREFIX });
    q.on("error", () => undefined); // a failed read says so through the exporter's failure counter
    return [type, q] as const;
  });
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: REDIS_TIMEOUT_MS, connectTimeout: 3_000 });
  client.on("error", () => undefined);
  return {
    async read() {
      const counts = await Promise.all(queues.map(async ([type, q]) => [type, (await q.getJobCounts(...JOB_STATES)) as Record<(typeof JOB_STATES)[number], number>] as const));
      const { lastSuccess } = await readBackupRuns(client, rootKey);
      const backups = new Map([...lastSuccess].map(([space, s]) => [space, Date.parse(s.at)] as const).filter(([, t]) => Number.isFinite(t)));
      return { queues: new Map<JobType, Record<(typeof JOB_STATES)[number], number>>(counts), backups };
    },
    async close() {
      await Promise.all(queues.map(([, q]) => q.close().catch(() => undefined)));
      client.disconnect();
    },
  };
}
