import type { Guards } from "@cotal/core/light";
import { workerConfig, type WorkerOverrides } from "./config.js";
import { redactRedisUrl } from "./connection.js";
import type { Logger } from "./log.js";
import { CotalWorker } from "./worker.js";

export interface WorkerServiceOptions {
  root: string;
  overrides?: WorkerOverrides;
  /** The environment the worker's settings are read from (the entry's: COTAL_WORKER_*, COTAL_JOBS_*, REDIS_URL). */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** The guards the entry handed in (default: every guard on; docs/ablation.md), passed to every verb a job calls. */
  guards?: Guards;
  /** Which signals drain the worker (default SIGTERM and SIGINT). */
  signals?: NodeJS.Signals[];
}

/**
 * Runs a worker until a signal: the shared body of `cotal worker` and apps/worker. Resolves with the
 * process exit code: 0 after a graceful drain, 1 when the drain deadline forced the close.
 */
export async function runWorkerService(opts: WorkerServiceOptions): Promise<number> {
  const cfg = workerConfig(opts.root, opts.overrides ?? {}, opts.env);
  const worker = await CotalWorker.start({ ...cfg, logger: opts.logger, ...(opts.guards ? { guards: opts.guards } : {}) });
  opts.logger.info(
    { event: "serving", pid: process.pid, root: cfg.root, rootKey: worker.rootKey, concurrency: cfg.concurrency, batchMax: cfg.batch.maxSize, batchWaitMs: cfg.batch.maxWaitMs, batchHoldMs: cfg.batch.maxHoldMs, blockedRetryMs: cfg.blockedRetryMs, health: worker.healthUrl ?? null },
    `worker pid ${process.pid} serving ${cfg.root} (queues *.${worker.rootKey}) from ${redactRedisUrl(cfg.redisUrl)}; concurrency ${cfg.concurrency}, batch ≤ ${cfg.batch.maxSize} within ${cfg.batch.maxWaitMs} ms (held up to ${cfg.batch.maxHoldMs} ms for jobs already claimed), lock ${cfg.stall.lockDurationMs} ms, a busy or blocked root waited out up to ${cfg.blockedRetryMs} ms` +
      (worker.healthUrl ? `; health ${worker.healthUrl}/healthz, metrics ${worker.healthUrl}/metrics` : ""),
  );
  const signals = opts.signals ?? ["SIGTERM", "SIGINT"];
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    for (const s of signals) process.once(s, () => resolve(s));
  });
  opts.logger.info({ event: "draining", signal }, `${signal}: draining held jobs (deadline ${cfg.drainDeadlineMs} ms)`);
  const { forced } = await worker.close();
  opts.logger.info({ event: forced ? "drain-forced" : "drained" }, forced ? "drain deadline passed: closed by force; held jobs stall and are re-delivered to another worker" : "drained; bye");
  return forced ? 1 : 0;
}
