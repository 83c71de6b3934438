import { requireRoot } from "@cotal/core/root";
import { Queue } from "bullmq";
import { connectionOptions, probeRedis, redisUnreachable } from "./connection.js";
import { isCotalError } from "@cotal/core/errors";
import { DEFAULT_JOB_OPTIONS } from "./job-options.js";
import { jobIdFor, queueNameFor, QUEUE_PREFIX, rootKeyFor, type JobType } from "./names.js";
import { parsePayload, type PayloadOf } from "./payloads.js";

export interface EnqueueOptions<T extends JobType> {
  type: T;
  root: string;
  redisUrl: string;
  /** Payloads without `root` (the enqueuer adds it); each is validated before anything is enqueued. */
  items: Omit<PayloadOf[T], "root">[];
}

export type EnqueueStatus = "enqueued" | "already-queued" | "requeued";

export interface EnqueueResult {
  type: JobType;
  queue: string;
  rootKey: string;
  jobs: { id: string; name: string; status: EnqueueStatus }[];
}

const PENDING = new Set(["waiting", "active", "delayed", "prioritized", "waiting-children", "paused"]);

async function inChunks<T, R>(items: readonly T[], size: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

export function openQueue(type: JobType, rootKey: string, redisUrl: string): Queue {
  const q = new Queue(queueNameFor(type, rootKey), { connection: connectionOptions(redisUrl, "producer"), prefix: QUEUE_PREFIX });
  q.on("error", () => undefined); // surfaced by the awaited calls
  return q;
}

/** A revocation's id names what it revokes: two revocations in one space are two jobs, a repeat is the same one. A key rotation's names its --finish or --keep-old. */
export function jobIdSuffix(p: object): string | undefined {
  const k = p as { finish?: boolean; keepOld?: number };
  if (k.finish) return "finish";
  if (k.keepOld !== undefined) return `keep-old-${k.keepOld}`;
  const r = p as { user?: string; key?: string; before?: number };
  if (r.user === undefined && r.key === undefined) return undefined;
  return [r.user !== undefined ? `user-${r.user}` : `key-${r.key ?? ""}`, ...(r.before !== undefined ? [`before-${r.before}`] : [])].join(".");
}

/**
 * One job per item, ids derived from the operation. A job already waiting/active/retrying keeps its
 * id (no duplicate); a failed (or retained completed) one is removed and enqueued again, so
 * re-running a command retries what failed.
 */
export async function enqueueJobs<T extends JobType>(opts: EnqueueOptions<T>): Promise<EnqueueResult> {
  requireRoot(opts.root);
  const payloads = opts.items.map((it) => parsePayload(opts.type, { ...it, root: opts.root }));
  await probeRedis(opts.redisUrl);
  const rootKey = rootKeyFor(opts.root);
  const queue = openQueue(opts.type, rootKey, opts.redisUrl);
  try {
    const planned = payloads.map((p) => ({ p, id: jobIdFor(opts.type, rootKey, p.name, jobIdSuffix(p)) }));
    const states = await inChunks(planned, 200, ({ id }) => queue.getJobState(id));
    const jobs: EnqueueResult["jobs"] = [];
    const toAdd: { name: string; data: PayloadOf[T]; opts: typeof DEFAULT_JOB_OPTIONS & { jobId: string } }[] = [];
    for (const [i, { p, id }] of planned.entries()) {
      const state = states[i] ?? "unknown";
      if (PENDING.has(state)) {
        jobs.push({ id, name: p.name, status: "already-queued" });
        continue;
      }
      if (state === "failed" || state === "completed") await queue.remove(id);
      jobs.push({ id, name: p.name, status: state === "unknown" ? "enqueued" : "requeued" });
      toAdd.push({ name: opts.type, data: p, opts: { ...DEFAULT_JOB_OPTIONS, jobId: id } });
    }
    for (let i = 0; i < toAdd.length; i += 500) await queue.addBulk(toAdd.slice(i, i + 500));
    return { type: opts.type, queue: queue.name, rootKey, jobs };
  } catch (err) {
    if (isCotalError(err)) throw err;
    if (/ECONNREFUSED|Connection is closed|ETIMEDOUT|max retries/i.test((err as Error).message)) throw redisUnreachable(opts.redisUrl, err);
    throw err;
  } finally {
    await queue.close().catch(() => undefined);
  }
}
