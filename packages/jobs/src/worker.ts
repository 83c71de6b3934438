import { existsSync, realpathSync } from "node:fs";
import type { Server } from "node:http";
import { describeError, RootLayout, CotalError, spaceRevoke, spaceRm, spaceRotateKey } from "@cotal/core";
import { type Guards } from "@cotal/core/light";
import { renderRerun } from "@cotal/core/errors";
import { quiescedCount } from "@cotal/core/backup";
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { WorkerConfig } from "./config.js";
import { connectionOptions, probeRedis } from "./connection.js";
import { toJobFailure } from "./failures.js";
import { BLOCKED_KEY, BLOCKED_RETRY_DEFAULTS, decideBlocked, jitterFor, splitJobData, type RootProbe } from "./blocked-retry.js";
import { runQueuedRestore, runScheduledBackup, type ScheduledBackupResult } from "./backup-run.js";
import { GroupCommit } from "./group-commit.js";
import { serveHealth } from "./http.js";
import { WorkerMetrics } from "./metrics.js";
import { lineLogger, type Logger } from "./log.js";
import { queueNameFor, QUEUE_PREFIX, rootKeyFor, type JobType } from "./names.js";
import { parsePayload, type SpaceBackupPayload } from "./payloads.js";
import { readBackupRuns, recordBackupRun, unscheduleBackup, type BackupRun } from "./schedules.js";
import { spaceAddBatchRunner, type SpaceAddItem, type SpaceAddJobResult } from "./space-add-batch.js";

export interface SpaceRmJobResult {
  space: string;
  outcome: "removed" | "absent";
  generation: number | null;
  /** The removed tenant's backup schedules: gone with it, or (Redis failing) still there, with the command that removes them. */
  schedules: "removed" | "absent" | { notRemoved: string; next: string };
}

/** How often a worker re-reads the run records for its backup metric (a `space rm` elsewhere drops a series within this). */
const BACKUP_METRIC_SYNC_MS = 30_000;

export interface CotalWorkerOptions extends WorkerConfig {
  /** Structured events worth a log line (batches, stalls, failures); silent without one. */
  logger?: Logger;
  /** The guards the entry handed in (default: every guard on; docs/ablation.md), passed to every verb a job calls. */
  guards?: Guards;
  /** How a blocked job reads the root's lock and journal (default: the files; blocked-retry.ts). */
  probe?: RootProbe;
}

/**
 * The worker both `cotal worker` and apps/worker run: BullMQ consumers for one root's queues. Redis
 * only hands out jobs; every decision is the saga's (KV record, CAS, resume table), so a duplicate
 * delivery after a stall re-runs an idempotent verb.
 */
export class CotalWorker {
  readonly metrics: WorkerMetrics;
  private readonly workers = new Map<JobType, Worker>();
  private readonly adds: GroupCommit<SpaceAddItem, SpaceAddJobResult>;
  /** The space-add queue, read only for its counts: how many jobs have not reached a batch yet. */
  private readonly addQueue: Queue;
  private readonly realRoot: string;
  private http: Server | undefined;
  /** Run records of scheduled backups (schedules.ts); fails fast, so a down Redis never holds a job's outcome. */
  private readonly runs: Redis;
  private syncTimer: ReturnType<typeof setInterval> | undefined;
  /** The root's series (docs/metrics.md): read at scrape time, cached and bounded. */
  private readonly rootWatch: { close(): Promise<void> };
  private state: "starting" | "running" | "draining" | "closed" = "starting";
  healthUrl: string | undefined;
  private get log(): Logger | undefined {
    return this.opts.logger;
  }

  private constructor(
    readonly opts: CotalWorkerOptions,
    readonly rootKey: string,
  ) {
    this.realRoot = realpathSync(opts.root);
    const layout = new RootLayout(this.realRoot);
    this.metrics = new WorkerMetrics(() => quiescedCount(layout, opts.guards));
    this.rootWatch = this.metrics.watchRoot({ root: this.realRoot, redisUrl: opts.redisUrl, ...(opts.guards ? { guards: opts.guards } : {}) });
    const log = this.log;
    this.runs = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 3_000 });
    this.runs.on("error", () => undefined); // each use reports its own failure
    // Fail fast (no offline queue, a command timeout): a count Redis cannot answer is a no, never a held batch.
    this.addQueue = new Queue(queueNameFor("space-add", rootKey), { connection: { url: opts.redisUrl, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 }, prefix: QUEUE_PREFIX });
    this.addQueue.on("error", (err) => log?.error({ event: "worker-error", type: "space-add", reason: err.message }, `space-add queue error: ${err.message}`));
    this.adds = new GroupCommit<SpaceAddItem, SpaceAddJobResult>(
      {
        maxBatch: opts.batch.maxSize,
        maxWaitMs: opts.batch.maxWaitMs,
        maxHoldMs: Math.max(opts.batch.maxHoldMs, opts.batch.maxWaitMs),
        // Active jobs include the ones in running batches (`held`); waiting ones are still to be claimed,
        // unless this worker holds all it may claim or has stopped claiming. Another worker's active jobs
        // count too: they cost a partial batch at most the hold (README, "Jobs").
        arriving: async (_key, held) => {
          if (held >= opts.concurrency || this.state !== "running") return false;
          const counts = await this.addQueue.getJobCounts("active", "wait");
          return (counts.active ?? 0) + (counts.wait ?? 0) > held;
        },
        // One batch's provisioning overlaps the next one's saga (it starts at the commit, docs/saga.md).
        maxInFlight: 2,
        onBatch: ({ size, ms, ok, heldMs }) => {
          this.metrics.batchSize.observe(size);
          this.metrics.batchSeconds.observe(ms / 1000);
          const held = heldMs === undefined ? "" : ` (held ${Math.round(heldMs)} ms for jobs already claimed)`;
          log?.info({ event: "batch", size, ms: Math.round(ms), ok, heldMs: heldMs === undefined ? null : Math.round(heldMs) }, `batch of ${size} space-add job(s) ${ok ? "committed" : "failed"} in ${Math.round(ms)} ms${held}`);
        },
      },
      spaceAddBatchRunner({
        root: opts.root,
        lockWaitMs: opts.lockWaitMs,
        onTiming: (step, ms) => this.metrics.stepSeconds.observe({ step }, ms / 1000),
        onNotice: (m) => log?.info({ event: "saga-notice" }, `saga: ${m}`),
        onResult: (r) => this.metrics.sagaResult(r),
        hooks: this.metrics.sagaHooks,
        ...(opts.guards ? { guards: opts.guards } : {}),
      }),
    );
  }

  /** Probes Redis and the root first, so a misconfigured worker says so instead of retrying forever. */
  static async start(opts: CotalWorkerOptions): Promise<CotalWorker> {
    if (!existsSync(opts.root)) {
      throw new CotalError("root-missing", `no cotal root at ${opts.root}; a worker serves an existing root`, { next: "cotal up --detach   # creates the root, then start the worker" });
    }
    await probeRedis(opts.redisUrl);
    const w = new CotalWorker(opts, rootKeyFor(opts.root));
    w.consume("space-add", opts.concurrency, (job, token) => w.processAdd(job, token));
    w.consume("space-rm", 1, (job, token) => w.processRm(job, token));
    w.consume("space-backup", 1, (job, token) => w.processBackup(job, token));
    w.consume("space-restore", 1, (job, token) => w.processRestore(job, token));
    w.consume("space-revoke", 1, (job, token) => w.processRevoke(job, token));
    w.consume("space-rotate-key", 1, (job, token) => w.processRotateKey(job, token));
    // Before serving: a restarted worker exports each tenant's last successful backup, not nothing.
    await w.syncBackupMetric();
    w.syncTimer = setInterval(() => void w.syncBackupMetric(), BACKUP_METRIC_SYNC_MS).unref();
    if (opts.http) {
      try {
        const { server, url } = await serveHealth(w, opts.http);
        w.http = server;
        w.healthUrl = url;
      } catch (err) {
        await w.close(0); // its consumers and the queue's connection would keep the process alive
        throw err;
      }
    }
    w.state = "running";
    return w;
  }

  private consume(type: JobType, concurrency: number, processor: (job: Job, token?: string) => Promise<unknown>): void {
    const log = this.log;
    const worker = new Worker(queueNameFor(type, this.rootKey), processor, {
      connection: connectionOptions(this.opts.redisUrl, "worker"),
      prefix: QUEUE_PREFIX,
      concurrency,
      lockDuration: this.opts.stall.lockDurationMs,
      stalledInterval: this.opts.stall.stalledIntervalMs,
      maxStalledCount: this.opts.stall.maxStalledCount,
      drainDelay: 1,
      autorun: true,
    });
    worker.on("active", () => this.metrics.active.inc({ type }));
    worker.on("completed", (job) => {
      this.metrics.active.dec({ type });
      this.metrics.processed.inc({ type, outcome: String((job.returnvalue as { outcome?: string } | undefined)?.outcome ?? "done") });
    });
    worker.on("failed", (job, err) => {
      if (job) this.metrics.active.dec({ type });
      const final = !job || err instanceof UnrecoverableError || err.name === "UnrecoverableError" || job.attemptsMade >= (job.opts.attempts ?? 1);
      this.metrics.failed.inc({ type, final: String(final) });
      log?.warn({ event: "job-failed", type, jobId: job?.id ?? null, final, reason: err.message }, `${type} job ${job?.id ?? "?"} failed${final ? "" : " (will retry)"}: ${err.message}`);
    });
    worker.on("stalled", (jobId) => log?.warn({ event: "job-stalled", type, jobId }, `${type} job ${jobId} stalled (its worker died or blocked); it is re-delivered`));
    // Connection trouble is reported here; ioredis reconnects by itself (maxRetriesPerRequest: null).
    worker.on("error", (err) => log?.error({ event: "worker-error", type, reason: err.message }, `${type} worker error: ${err.message}`));
    this.workers.set(type, worker);
  }

  private checkRoot(root: string): void {
    let real = root;
    try {
      real = realpathSync(root);
    } catch {
      // compared as given
    }
    if (real !== this.realRoot) throw new UnrecoverableError(`[invalid-payload] job for root ${root}; this worker serves ${this.opts.root}`);
  }

  /**
   * The error a processor throws for `err`: a busy or blocked root moves the job to BullMQ's delayed
   * set (no attempt spent) while its window lasts, or fails it for good with the refusal's `next:`
   * (docs/commands/jobs.md, "Busy and blocked roots"); anything else as failures.ts says.
   */
  private async failure(type: JobType, job: Job, token: string | undefined, err: unknown): Promise<Error> {
    if (err instanceof UnrecoverableError) return err;
    const { state } = splitJobData(job.data);
    const now = Date.now();
    const d = decideBlocked(err, { root: this.realRoot, state, now, opts: { ...BLOCKED_RETRY_DEFAULTS, windowMs: this.opts.blockedRetryMs }, jitter: jitterFor(err), ...(this.opts.probe ? { probe: this.opts.probe } : {}) });
    if (d.kind === "other") return toJobFailure(err);
    if (d.kind === "fail" || token === undefined) return d.kind === "fail" ? d.error : toJobFailure(err);
    await job.updateData({ ...(job.data as Record<string, unknown>), [BLOCKED_KEY]: d.state });
    await job.moveToDelayed(d.at, token);
    this.metrics.active.dec({ type }); // neither completed nor failed: the listeners never see it
    const reason = describeError(err).message;
    this.log?.info({ event: "job-delayed", type, jobId: job.id ?? null, retryAt: new Date(d.at).toISOString(), tries: d.state.tries, blockedMs: now - d.state.since, reason }, `${type} job ${job.id ?? "?"} waits out a busy root (retry ${d.state.tries} in ${Math.max(0, d.at - now)} ms): ${reason}`);
    return new DelayedError();
  }

  private async processAdd(job: Job, token?: string): Promise<SpaceAddJobResult> {
    let name: string;
    try {
      const p = parsePayload("space-add", splitJobData(job.data).payload);
      this.checkRoot(p.root);
      name = p.name;
    } catch (err) {
      throw err instanceof UnrecoverableError ? err : toJobFailure(err); // validated per job: a bad one never joins a batch
    }
    try {
      return await this.adds.submit(this.rootKey, { name, jobId: job.id ?? name });
    } catch (err) {
      // A batch that met a busy root hands every job the one refusal: each waits it out on its own, together (jitterFor).
      throw await this.failure("space-add", job, token, err);
    }
  }

  private async processRm(job: Job, token?: string): Promise<SpaceRmJobResult> {
    try {
      const p = parsePayload("space-rm", splitJobData(job.data).payload);
      this.checkRoot(p.root);
      const r = await spaceRm({
        root: p.root,
        name: p.name,
        lockWaitMs: this.opts.lockWaitMs,
        onTiming: (step, ms) => this.metrics.stepSeconds.observe({ step }, ms / 1000),
        ...this.metrics.sagaHooks,
        ...(this.opts.guards ? { guards: this.opts.guards } : {}),
      });
      if (r.saga) this.metrics.sagaResult(r.saga);
      return { space: r.space, outcome: r.outcome, generation: r.saga?.generation ?? null, schedules: await this.unscheduleRemoved(p.root, r.space) };
    } catch (err) {
      throw await this.failure("space-rm", job, token, err);
    }
  }

  /** A removed tenant's backup schedules go with it; the removal already happened, so a failure here is a note, never the job's. */
  private async unscheduleRemoved(root: string, space: string): Promise<SpaceRmJobResult["schedules"]> {
    try {
      const u = await unscheduleBackup({ root, space, redisUrl: this.opts.redisUrl, ...(this.opts.guards ? { guards: this.opts.guards } : {}) });
      this.metrics.backupLastSuccess.remove({ root: this.realRoot, space });
      if (u.outcome === "removed") this.log?.info({ event: "unscheduled", space, schedulers: u.schedulers }, `space-rm ${space}: removed its backup schedule(s) ${u.schedulers.join(", ")}`);
      return u.outcome;
    } catch (err) {
      const next = renderRerun(["--root", root, "jobs", "unschedule", space]);
      const notRemoved = describeError(err).message;
      this.log?.warn({ event: "unschedule-failed", space, reason: notRemoved, next }, `space-rm ${space}: removed, but its backup schedules were not: ${notRemoved}; next: ${next}`);
      return { notRemoved, next };
    }
  }

  private async processBackup(job: Job, token?: string): Promise<ScheduledBackupResult> {
    let p: SpaceBackupPayload;
    try {
      p = parsePayload("space-backup", splitJobData(job.data).payload);
      this.checkRoot(p.root);
    } catch (err) {
      throw err instanceof UnrecoverableError ? err : toJobFailure(err);
    }
    const base = { jobId: job.id ?? null, artifact: null, bytes: null, reason: null, error: null };
    try {
      const r = await runScheduledBackup(p, this.log && lineLogger(this.log), this.opts.guards);
      const at = Date.now();
      if (r.outcome === "done") this.metrics.backupSucceeded(this.realRoot, p.name, at);
      const run: BackupRun = r.outcome === "done" ? { ...base, at: new Date(at).toISOString(), outcome: "succeeded", artifact: r.artifact ?? null, bytes: r.bytes } : { ...base, at: new Date(at).toISOString(), outcome: "skipped", reason: r.reason ?? null };
      await this.recordRun(p.name, run);
      return r;
    } catch (err) {
      const failure = await this.failure("space-backup", job, token, err);
      if (failure instanceof DelayedError) throw failure; // still waiting: no run to record yet
      const e = describeError(err, { rerun: "cotal jobs status" });
      await this.recordRun(p.name, { ...base, at: new Date().toISOString(), outcome: "failed", reason: e.message, error: { code: e.code, message: e.message, next: e.next } });
      throw failure;
    }
  }

  /** Best effort: the run's outcome stands in BullMQ's job either way; a lost record only dims the list and the metric. */
  private async recordRun(space: string, run: BackupRun): Promise<void> {
    try {
      await recordBackupRun(this.runs, this.rootKey, space, run);
    } catch (err) {
      this.log?.warn({ event: "run-record-failed", space, reason: (err as Error).message }, `backup of ${space}: its run record was not written: ${(err as Error).message}`);
    }
  }

  /** The backup metric from the run records in Redis (start, then every BACKUP_METRIC_SYNC_MS); a failed read keeps the series as they are. */
  private async syncBackupMetric(): Promise<void> {
    const readAt = Date.now();
    try {
      const { lastSuccess } = await readBackupRuns(this.runs, this.rootKey);
      const atMs = new Map([...lastSuccess].map(([space, s]) => [space, Date.parse(s.at)] as const).filter(([, t]) => Number.isFinite(t)));
      this.metrics.syncBackupSuccesses(this.realRoot, atMs, readAt);
    } catch (err) {
      this.log?.warn({ event: "run-records-unread", reason: (err as Error).message }, `backup run records unread: ${(err as Error).message}`);
    }
  }

  private async processRestore(job: Job, token?: string): Promise<{ space: string; streams: number; alreadyRestored: boolean }> {
    try {
      const p = parsePayload("space-restore", splitJobData(job.data).payload);
      this.checkRoot(p.root);
      // One request = one job id at one enqueue time: retries and re-deliveries share it, a re-enqueue does not.
      const r = await runQueuedRestore(p, `${job.id ?? "?"}@${job.timestamp}`, this.log && lineLogger(this.log), this.opts.guards);
      return { space: r.space, streams: r.streams.length, alreadyRestored: r.alreadyRestored !== undefined };
    } catch (err) {
      throw await this.failure("space-restore", job, token, err);
    }
  }

  private async processRevoke(job: Job, token?: string): Promise<{ space: string; outcome: string; generation: number; revoked: string[] }> {
    try {
      const p = parsePayload("space-revoke", splitJobData(job.data).payload);
      this.checkRoot(p.root);
      const { root: _root, ...selector } = p;
      const r = await spaceRevoke({
        root: p.root,
        ...selector,
        lockWaitMs: this.opts.lockWaitMs,
        onTiming: (step, ms) => this.metrics.stepSeconds.observe({ step }, ms / 1000),
        ...this.metrics.sagaHooks,
        ...(this.opts.guards ? { guards: this.opts.guards } : {}),
      });
      return { space: r.space, outcome: r.outcome, generation: r.generation, revoked: r.revoked.map((c) => c.publicKey) };
    } catch (err) {
      throw await this.failure("space-revoke", job, token, err);
    }
  }

  private async processRotateKey(job: Job, token?: string): Promise<{ space: string; outcome: string; generation: number; newKey?: string }> {
    try {
      const p = parsePayload("space-rotate-key", splitJobData(job.data).payload);
      this.checkRoot(p.root);
      const r = await spaceRotateKey({
        root: p.root,
        name: p.name,
        ...(p.keepOld !== undefined ? { keepOldSeconds: p.keepOld } : {}),
        ...(p.finish ? { finish: true } : {}),
        lockWaitMs: this.opts.lockWaitMs,
        onTiming: (step, ms) => this.metrics.stepSeconds.observe({ step }, ms / 1000),
        ...this.metrics.sagaHooks,
        ...(this.opts.guards ? { guards: this.opts.guards } : {}),
      });
      return { space: r.space, outcome: r.outcome, generation: r.generation, ...(r.newKey ? { newKey: r.newKey } : {}) };
    } catch (err) {
      throw await this.failure("space-rotate-key", job, token, err);
    }
  }

  health(): { ok: boolean; status: string } {
    if (this.state !== "running") return { ok: false, status: this.state };
    const down = [...this.workers.entries()].filter(([, w]) => !w.isRunning()).map(([t]) => t);
    return down.length ? { ok: false, status: `not consuming: ${down.join(", ")}` } : { ok: true, status: "ok" };
  }

  /** Prometheus exposition: the worker's own series, and the root's from a cached, bounded snapshot (root-exporter.ts). */
  renderMetrics(): Promise<string> {
    return this.metrics.render();
  }

  // HealthSource
  metricsText = (): Promise<string> => this.renderMetrics();
  get metricsContentType(): string {
    return this.metrics.contentType;
  }

  /**
   * Graceful drain: stop fetching, let held jobs (and their batch) finish, close. Past the deadline
   * close by force: the held jobs stall and another worker re-runs them (idempotent by the saga).
   */
  async close(deadlineMs = this.opts.drainDeadlineMs): Promise<{ forced: boolean }> {
    if (this.state === "closed") return { forced: false };
    this.state = "draining";
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceful = Promise.all([...this.workers.values()].map((w) => w.close())).then(() => false);
    const deadline = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), deadlineMs)));
    const forced = await Promise.race([graceful, deadline]);
    if (timer) clearTimeout(timer);
    if (forced) await Promise.all([...this.workers.values()].map((w) => w.close(true).catch(() => undefined)));
    // Only counts were read through it: drop the connection (a graceful QUIT would wait behind a hung count).
    await this.addQueue.disconnect().catch(() => undefined);
    if (this.syncTimer) clearInterval(this.syncTimer);
    this.runs.disconnect();
    await this.rootWatch.close();
    await new Promise<void>((r) => (this.http ? this.http.close(() => r()) : r()));
    this.state = "closed";
    return { forced };
  }
}
