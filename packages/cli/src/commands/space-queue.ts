import type { SpaceListReport } from "@cotal/core";
import type { Guards } from "@cotal/core/light";
import { CotalError, describeError, isCotalError, renderRerun } from "@cotal/core/errors";
import type { Logger } from "@cotal/jobs/log";
import { summariseNames } from "../batch-summary.js";
import { countLogger } from "../feedback.js";
import { err, json, out } from "../output.js";
import type { Progress } from "../progress.js";

export interface QueuedAddFlags {
  json?: boolean;
  /** false with --no-wait: enqueue and return at once. */
  wait: boolean;
  /** While waiting: a bar on a TTY, log lines with --log-format (cli feedback.ts). */
  bar?: Progress;
  log?: Logger | undefined;
  /** The guards the CLI's entry handed in (docs/ablation.md). */
  guards?: Guards;
}

/**
 * `cotal space add … --queue`: one job per space (deterministic ids), then follow them to the end.
 * Redis only schedules; the saga decides, so the outcome is confirmed against the KV inventory.
 */
export async function queuedSpaceAdd(root: string, names: string[], flags: QueuedAddFlags & { guards: Guards }): Promise<void> {
  const { RERUN, followCommits, spaceList, validateBatch } = await import("@cotal/core");
  const unique = validateBatch(names, flags.guards); // the same refusal as a direct add, before anything is enqueued
  const jobs = await import("@cotal/jobs"); // lazy: verbs without --queue never load ioredis
  const redisUrl = jobs.redisUrlFrom(process.env);
  const t0 = Date.now();
  const r = await jobs.enqueueJobs({ type: "space-add", root, redisUrl, items: unique.map((name) => ({ name })) });
  const count = (s: string) => r.jobs.filter((j) => j.status === s).length;
  const summary = { queue: r.queue, enqueued: count("enqueued"), alreadyQueued: count("already-queued"), requeued: count("requeued") };
  if (!flags.wait) {
    if (flags.json) return json({ ...summary, jobs: r.jobs, waited: false });
    out(`cotal: enqueued ${summary.enqueued} space-add job(s)${summary.alreadyQueued ? `, ${summary.alreadyQueued} already queued` : ""}${summary.requeued ? `, ${summary.requeued} re-queued after a failure` : ""} on ${r.queue}`);
    out("  next: cotal jobs status   # and keep a worker running: cotal worker");
    return;
  }
  if (!flags.json) err(`cotal: ${r.jobs.length} space-add job(s) queued (${summary.enqueued} new, ${summary.alreadyQueued} already queued, ${summary.requeued} re-queued); waiting for workers (cotal worker)…`);
  // Only a bar or log lines read the commits: a plain wait opens no store connection.
  const follower = flags.bar?.live || flags.log ? await followCommits({ root, names: unique, guards: flags.guards }).catch(() => undefined) : undefined;
  let tracked: Awaited<ReturnType<typeof jobs.trackJobs>>;
  try {
    flags.bar?.phase("queue", r.jobs.length);
    const onProgress = queueProgress({ total: r.jobs.length, bar: flags.bar, log: flags.log, committed: follower ? () => follower.committed() : undefined });
    tracked = await jobs.trackJobs({ redisUrl, queue: r.queue, ids: r.jobs.map((j) => j.id), onProgress: (p) => void onProgress(p) });
  } finally {
    flags.bar?.stop();
    await follower?.close().catch(() => undefined);
  }

  // A job gone from Redis either completed (removeOnComplete) or was lost (FLUSHALL): the KV says which.
  const list = await spaceList({ root, guards: flags.guards });
  const nameOf = new Map(r.jobs.map((j) => [j.id, j.name]));
  const lost = addsWithoutEffect(tracked.gone.map((id) => nameOf.get(id) ?? id), list);
  const failed = tracked.failed.map((f) => ({ space: nameOf.get(f.id) ?? f.id, id: f.id, reason: f.reason }));
  const result = { ...summary, waited: true, elapsedMs: Date.now() - t0, completed: tracked.gone.length - lost.length, failed, lost, generation: list.generation };
  if (failed.length > 0) {
    throw new CotalError("job-failed", `${failed.length} of ${r.jobs.length} space-add job(s) failed: ${failed.slice(0, 5).map((f) => `${f.space}: ${f.reason}`).join("; ")}${failed.length > 5 ? "; …" : ""}`, {
      next: "cotal jobs status   # reasons in full; fix the cause, then re-run the same command (it re-queues only what failed)",
      details: result,
    });
  }
  if (lost.length > 0) {
    throw new CotalError("job-lost", `${lost.length} job(s) vanished from Redis without their space reaching the inventory (was Redis flushed or restarted?)`, {
      next: `${RERUN}   # present spaces are no-op successes, the rest are queued again`,
      details: result,
    });
  }
  if (flags.json) return json(result);
  out(`cotal: ${summariseNames(unique)} in the inventory through the queue (${result.completed} completed) in ${(result.elapsedMs / 1000).toFixed(1)} s (generation ${list.generation})`);
  out(`  next: cotal space creds ${unique[0]}`);
}

/** What the tracker counts on each tick (jobs' TrackProgress). */
export interface JobCounts {
  finished: number;
  failed: number;
  pending: number;
}

/**
 * The queued add's bar and log lines (docs/commands/space.md): a job finishes only once its whole
 * batch is committed *and* provisioned, so counting jobs alone sits at 0 % while workers commit. The
 * bar counts the names the KV record lists (`committed`, read once per tick, never two reads at once)
 * or the finished jobs if more, plus the failed ones. Returns the tick; its promise settles when the
 * tick's read has been drawn.
 */
export function queueProgress(o: { total: number; bar?: Progress | undefined; log?: Logger | undefined; committed?: (() => Promise<number | undefined>) | undefined }): (p: JobCounts) => Promise<void> {
  const logJobs = countLogger(o.log, "queued space-add jobs finished");
  const logCommits = countLogger(o.log, "queued spaces committed");
  let commits = 0;
  let last: JobCounts = { finished: 0, failed: 0, pending: o.total };
  let reading: Promise<void> | undefined;
  const draw = (): void => {
    const done = Math.min(o.total, Math.max(commits, last.finished) + last.failed);
    o.bar?.update(done, o.total, `${Math.max(commits, last.finished)} committed, ${last.finished} done, ${last.failed} failed, ${last.pending} pending`);
  };
  return (p) => {
    last = p;
    draw();
    logJobs({ done: p.finished + p.failed, total: o.total });
    if (!o.committed || reading) return reading ?? Promise.resolve();
    reading = o.committed().then((n) => {
      reading = undefined;
      if (n === undefined || n <= commits) return;
      commits = n;
      draw();
      logCommits({ done: n, total: o.total });
    });
    return reading;
  };
}

/**
 * Of the added spaces whose jobs left Redis, those the KV inventory does not hold: lost, not done. A space
 * already quiesced by a backup or named by a removal that came after is in the inventory: its add was done.
 */
export function addsWithoutEffect(names: string[], list: Pick<SpaceListReport, "spaces">): string[] {
  const held = new Set(list.spaces.filter((s) => s.inInventory === true).map((s) => s.name));
  return names.filter((n) => !held.has(n));
}

/**
 * `space rm --queue` / `space restore --queue`: one job with a deterministic id, followed to the end.
 * A job gone from Redis completed (or was flushed away): `confirm` asks the root which.
 */
export async function queuedSingle(
  root: string,
  type: "space-rm" | "space-restore" | "space-revoke" | "space-rotate-key",
  item: { name: string; from?: string; rebindAccount?: boolean; replace?: boolean; yes?: boolean; user?: string; key?: string; before?: number; force?: boolean; keepOld?: number; finish?: boolean },
  flags: QueuedAddFlags,
  confirm: () => Promise<boolean>,
): Promise<void> {
  const { RERUN } = await import("@cotal/core");
  const jobs = await import("@cotal/jobs");
  const redisUrl = jobs.redisUrlFrom(process.env);
  const r = await jobs.enqueueJobs({ type, root, redisUrl, items: [item] as never });
  const job = r.jobs[0];
  if (!job) return;
  if (!flags.wait) {
    if (flags.json) return json({ queue: r.queue, job, waited: false });
    return out(`cotal: ${job.status} ${type} job ${job.id} on ${r.queue}\n  next: cotal jobs status   # and keep a worker running: cotal worker`);
  }
  if (!flags.json) err(`cotal: ${type} job ${job.id} ${job.status}; waiting for a worker (cotal worker)…`);
  const tracked = await jobs.trackJobs({ redisUrl, queue: r.queue, ids: [job.id] });
  const failed = tracked.failed[0];
  if (failed) throw new CotalError("job-failed", `${type} of ${item.name} failed: ${failed.reason}`, { next: `cotal jobs status   # the reason in full; once the cause is fixed: ${RERUN}` });
  if (!(await confirm())) {
    throw new CotalError("job-lost", `the ${type} job of ${item.name} vanished from Redis without its effect on the root (was Redis flushed?)`, { next: RERUN });
  }
  if (flags.json) return json({ queue: r.queue, job, waited: true, elapsedMs: tracked.elapsedMs });
  out(`cotal: ${type} of ${item.name} done through the queue in ${(tracked.elapsedMs / 1000).toFixed(1)} s`);
}

/** What `space rm` did about the removed tenant's backup schedules (its `--json` field `backupSchedules`). */
export type RemovedSchedules = { outcome: "removed"; schedulers: string[] } | { outcome: "absent" } | { outcome: "no-redis" } | { outcome: "not-removed"; reason: string; next: string };

/**
 * After a removal, the removed tenant's backup schedules go too (issue #29). The removal has already
 * happened, so this never fails it: Redis failing is a note with the command that finishes the job.
 * Without REDIS_URL a refused default Redis means no jobs layer is in use: nothing to say.
 */
export async function unscheduleRemoved(root: string, space: string): Promise<RemovedSchedules> {
  const jobs = await import("@cotal/jobs"); // lazy: only now does space rm load ioredis
  try {
    const r = await jobs.unscheduleBackup({ root, space, redisUrl: jobs.redisUrlFrom(process.env) });
    return r.outcome === "removed" ? { outcome: "removed", schedulers: r.schedulers } : { outcome: "absent" };
  } catch (e) {
    if (!process.env.REDIS_URL?.trim() && isCotalError(e, "redis-unreachable")) return { outcome: "no-redis" };
    return { outcome: "not-removed", reason: describeError(e).message, next: renderRerun(["--root", root, "jobs", "unschedule", space]) };
  }
}

/** The text form of unscheduleRemoved's outcome: a line when something was removed, a note on stderr when it could not be. */
export function printRemovedSchedules(space: string, s: RemovedSchedules): void {
  if (s.outcome === "removed") out(`  removed its backup schedule(s): ${s.schedulers.join(", ")}`);
  if (s.outcome === "not-removed") {
    err(`cotal: note: space ${space} is removed, but its backup schedules could not be: ${s.reason}`);
    err(`  next: ${s.next}`);
  }
}
