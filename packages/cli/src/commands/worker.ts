import type { Command } from "commander";
import { guardsOf, rootOf } from "../context.js";
import { logFormatOf, logLevel } from "../feedback.js";
import { rerunWith, usageError } from "@cotal/core/errors";

function count(flag: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min) throw usageError(`${flag} takes a whole number >= ${min}, got ${JSON.stringify(v)}`, `cotal worker ${flag} ${Math.max(min, 1)}`);
    return n;
  };
}

interface WorkerFlags {
  concurrency?: number;
  batchSize?: number;
  batchWait?: number;
  batchHold?: number;
  lockDuration?: number;
  stalledInterval?: number;
  metricsPort?: number;
  metricsHost?: string;
  blockedRetry?: number;
}

/** --metrics-host: a listen address (the rule is the worker's, isListenHost), and one with a port to serve on. */
function checkMetricsHost(host: string, hasPort: boolean, isListenHost: (h: string) => boolean): void {
  if (!isListenHost(host)) {
    throw usageError(`--metrics-host takes an address to listen on (an IP or a host name), got ${JSON.stringify(host)}`, `${rerunWith({ "--metrics-host": "127.0.0.1" })}   # or 0.0.0.0: every interface`);
  }
  if (!hasPort) throw usageError("--metrics-host serves nothing without a port: give --metrics-port (or $COTAL_WORKER_METRICS_PORT)", rerunWith({ "--metrics-port": "9464" }));
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description("process this root's queued lifecycle jobs (the same worker as apps/worker); SIGTERM drains")
    .option("--concurrency <n>", "space-add jobs held at once, the pool group commit draws from (default: 2000, or $COTAL_WORKER_CONCURRENCY)", count("--concurrency", 1))
    .option("--batch-size <n>", "most space-add jobs per saga call (one reload) (default: 1000, or $COTAL_JOBS_BATCH_MAX)", count("--batch-size", 1))
    .option("--batch-wait <ms>", "longest a job waits for a batch to fill (default: 250, or $COTAL_JOBS_BATCH_WAIT_MS)", count("--batch-wait", 0))
    .option("--batch-hold <ms>", "longest a batch's first job waits while jobs already claimed from the queue have not reached it (default: 2000, or $COTAL_JOBS_BATCH_HOLD_MS)", count("--batch-hold", 0))
    .option("--lock-duration <ms>", "job lock; a dead worker's jobs are re-delivered after it (default: 30000, or $COTAL_JOBS_LOCK_DURATION_MS)", count("--lock-duration", 500))
    .option("--stalled-interval <ms>", "how often to look for stalled jobs (default: 30000, or $COTAL_JOBS_STALLED_INTERVAL_MS)", count("--stalled-interval", 200))
    .option("--blocked-retry <ms>", "how long a job waits out a busy root or a running verb's journal before it fails for good, 0 = at once (default: 600000, or $COTAL_JOBS_BLOCKED_RETRY_MS)", count("--blocked-retry", 0))
    .option("--metrics-port <port>", "serve /healthz and /metrics on <port> of --metrics-host (0 = any free port) (default: none, or $COTAL_WORKER_METRICS_PORT)", count("--metrics-port", 0))
    .option("--metrics-host <host>", "address /healthz and /metrics listen on, e.g. 0.0.0.0 for a Prometheus on another host (default: 127.0.0.1, or $COTAL_WORKER_METRICS_HOST)")
    .action(async (flags: WorkerFlags, cmd: Command) => {
      const { createLogger, defaultLogFormat, isListenHost, runWorkerService } = await import("@cotal/jobs"); // lazy: only this verb loads BullMQ
      if (flags.metricsHost !== undefined) checkMetricsHost(flags.metricsHost, flags.metricsPort !== undefined || Boolean(process.env.COTAL_WORKER_METRICS_PORT), isListenHost);
      const guards = guardsOf(cmd);
      const logger = createLogger({ name: "cotal worker", format: logFormatOf(cmd) ?? defaultLogFormat(process.stderr.isTTY), guards, ...logLevel() });
      process.exitCode = await runWorkerService({
        root: rootOf(cmd),
        overrides: {
          ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
          batch: { ...(flags.batchSize !== undefined ? { maxSize: flags.batchSize } : {}), ...(flags.batchWait !== undefined ? { maxWaitMs: flags.batchWait } : {}), ...(flags.batchHold !== undefined ? { maxHoldMs: flags.batchHold } : {}) },
          stall: { ...(flags.lockDuration !== undefined ? { lockDurationMs: flags.lockDuration } : {}), ...(flags.stalledInterval !== undefined ? { stalledIntervalMs: flags.stalledInterval } : {}) },
          ...(flags.blockedRetry !== undefined ? { blockedRetryMs: flags.blockedRetry } : {}),
          http: { ...(flags.metricsPort !== undefined ? { port: flags.metricsPort } : {}), ...(flags.metricsHost !== undefined ? { host: flags.metricsHost } : {}) },
        },
        logger,
        guards,
        env: process.env,
      });
    });
}
