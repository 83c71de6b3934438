import { CotalError } from "@cotal/core/errors";
import { redisUrlFrom } from "./connection.js";
import { BLOCKED_RETRY_DEFAULTS } from "./blocked-retry.js";

export interface StallOptions {
  /** A held job's lock lives this long without renewal; a dead worker's jobs are re-delivered after it. */
  lockDurationMs: number;
  /** How often workers look for jobs whose lock expired. */
  stalledIntervalMs: number;
  /** Re-deliveries after stalls before a job fails for good. */
  maxStalledCount: number;
}

export interface BatchOptions {
  /** At most this many space-add jobs per saga call (one reload). */
  maxSize: number;
  /** The first job of a batch waits at most this long for company. */
  maxWaitMs: number;
  /**
   * ...and up to this long while jobs already claimed from (or still in) the space-add queue have
   * not reached the batch yet: an idle BullMQ worker may hand a burst's first job on, then claim
   * the rest one round trip at a time before it hands any of them on (docs/saga.md, "The queue").
   */
  maxHoldMs: number;
}

export interface WorkerConfig {
  root: string;
  redisUrl: string;
  /** Space-add jobs one worker holds at once: the pool group commit draws from (≥ 2 × batch size keeps one batch filling while one runs). */
  concurrency: number;
  batch: BatchOptions;
  stall: StallOptions;
  /** How long a saga call waits for the root maintenance lock another worker holds (generous: workers queue on it). */
  lockWaitMs: number;
  /**
   * Health and metrics endpoint; port 0 picks a free port; absent = none. The host is loopback unless
   * `--metrics-host` or COTAL_WORKER_METRICS_HOST says otherwise (0.0.0.0 in a container, so Prometheus on the compose
   * network can scrape it: docs/service.md). /healthz and /metrics only read.
   */
  http: { host: string; port: number } | undefined;
  /** SIGTERM drains held jobs this long, then closes by force (the jobs stall and are re-delivered). */
  drainDeadlineMs: number;
  /** How long a job waits out a busy or blocked root (`lock-held`, a running verb's `journal-blocked`) before it fails for good; 0: at once (blocked-retry.ts). */
  blockedRetryMs: number;
}

/**
 * Batches of 1,000 and twice that many jobs held: N queued adds cost ~N/1,000 reloads, and the next
 * batch fills while one provisions. Batches of 100 cost ten reloads per 1,000, and on 2.9.10 each
 * reload drops the provisioners still at work (BENCHMARKS.md, "The queue path").
 */
export const WORKER_DEFAULTS = {
  concurrency: 2000,
  batch: { maxSize: 1000, maxWaitMs: 250, maxHoldMs: 2000 },
  stall: { lockDurationMs: 30_000, stalledIntervalMs: 30_000, maxStalledCount: 3 },
  lockWaitMs: 10 * 60_000,
  drainDeadlineMs: 60_000,
  blockedRetryMs: BLOCKED_RETRY_DEFAULTS.windowMs,
} as const;

function intFrom(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new CotalError("invalid-payload", `${name}=${JSON.stringify(raw)} must be an integer >= ${min}`, { next: `unset ${name} or give it a whole number` });
  return n;
}

/** Where the health and metrics endpoint listens when nothing says otherwise. */
export const METRICS_HOST_DEFAULT = "127.0.0.1";

export type WorkerOverrides = Partial<Omit<WorkerConfig, "batch" | "stall" | "root" | "http">> & {
  batch?: Partial<BatchOptions>;
  stall?: Partial<StallOptions>;
  /**
   * A host given here (`cotal worker --metrics-host`) beats COTAL_WORKER_METRICS_HOST, a port beats
   * COTAL_WORKER_METRICS_PORT; without a port from either, nothing listens.
   */
  http?: { host?: string; port?: number };
};

/** An address to listen on: an IP literal or a host name, never empty, a URL or spaced (a typo would bind nothing useful). */
export function isListenHost(raw: string): boolean {
  return /^[A-Za-z0-9.:_-]+$/.test(raw);
}

/** COTAL_WORKER_METRICS_HOST, checked as {@link isListenHost}. */
function hostFrom(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.COTAL_WORKER_METRICS_HOST;
  if (raw === undefined || raw === "") return undefined;
  if (!isListenHost(raw)) throw new CotalError("invalid-payload", `COTAL_WORKER_METRICS_HOST=${JSON.stringify(raw)} is not a listen address`, { next: "COTAL_WORKER_METRICS_HOST=0.0.0.0   # or unset it for 127.0.0.1" });
  return raw;
}

/**
 * The one place worker settings are read: explicit overrides (CLI flags) beat the environment
 * (COTAL_WORKER_* / COTAL_JOBS_*, what tests and the systemd unit set), which beats the defaults.
 */
export function workerConfig(root: string, overrides: WorkerOverrides, env: NodeJS.ProcessEnv): WorkerConfig {
  const port = overrides.http?.port ?? intFrom(env, "COTAL_WORKER_METRICS_PORT", 0);
  const cfg: WorkerConfig = {
    root,
    redisUrl: overrides.redisUrl ?? redisUrlFrom(env),
    concurrency: overrides.concurrency ?? intFrom(env, "COTAL_WORKER_CONCURRENCY", 1) ?? WORKER_DEFAULTS.concurrency,
    batch: {
      maxSize: overrides.batch?.maxSize ?? intFrom(env, "COTAL_JOBS_BATCH_MAX", 1) ?? WORKER_DEFAULTS.batch.maxSize,
      maxWaitMs: overrides.batch?.maxWaitMs ?? intFrom(env, "COTAL_JOBS_BATCH_WAIT_MS", 0) ?? WORKER_DEFAULTS.batch.maxWaitMs,
      maxHoldMs: overrides.batch?.maxHoldMs ?? intFrom(env, "COTAL_JOBS_BATCH_HOLD_MS", 0) ?? WORKER_DEFAULTS.batch.maxHoldMs,
    },
    stall: {
      lockDurationMs: overrides.stall?.lockDurationMs ?? intFrom(env, "COTAL_JOBS_LOCK_DURATION_MS", 500) ?? WORKER_DEFAULTS.stall.lockDurationMs,
      stalledIntervalMs: overrides.stall?.stalledIntervalMs ?? intFrom(env, "COTAL_JOBS_STALLED_INTERVAL_MS", 200) ?? WORKER_DEFAULTS.stall.stalledIntervalMs,
      maxStalledCount: overrides.stall?.maxStalledCount ?? intFrom(env, "COTAL_JOBS_MAX_STALLED", 0) ?? WORKER_DEFAULTS.stall.maxStalledCount,
    },
    lockWaitMs: overrides.lockWaitMs ?? intFrom(env, "COTAL_JOBS_LOCK_WAIT_MS", 0) ?? WORKER_DEFAULTS.lockWaitMs,
    http: port === undefined ? undefined : { host: overrides.http?.host ?? hostFrom(env) ?? METRICS_HOST_DEFAULT, port },
    drainDeadlineMs: overrides.drainDeadlineMs ?? intFrom(env, "COTAL_WORKER_DRAIN_MS", 0) ?? WORKER_DEFAULTS.drainDeadlineMs,
    blockedRetryMs: overrides.blockedRetryMs ?? intFrom(env, "COTAL_JOBS_BLOCKED_RETRY_MS", 0) ?? WORKER_DEFAULTS.blockedRetryMs,
  };
  return cfg;
}
