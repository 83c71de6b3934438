#!/usr/bin/env node
// The cotal worker as a service (systemd unit, compose): settings from the environment
// (COTAL_ROOT, REDIS_URL, COTAL_WORKER_*, COTAL_JOBS_*, COTAL_LOG_FORMAT) and `--concurrency N`.
import { createLogger, isJobsError, isLogFormat, runWorkerService, type WorkerOverrides } from "@cotal/jobs";
import { isSagaError, resolveRoot, SagaError } from "@cotal/saga";
import { workerArgs } from "./args.js";

// Refusals stay plain stderr lines (`next:` included), whatever the log format: a person reads them.
const refuse = (line: string): void => void process.stderr.write(`cotal-worker: ${line}\n`);

try {
  const { logFormat, ...args } = workerArgs(process.argv.slice(2));
  const envFormat = process.env.COTAL_LOG_FORMAT;
  if (envFormat !== undefined && !isLogFormat(envFormat)) throw new SagaError("invalid-argument", `COTAL_LOG_FORMAT=${JSON.stringify(envFormat)} is not a log format`, { exit: "COTAL_LOG_FORMAT=json   # or pretty" });
  // A service's stderr goes to journald or docker logs: JSON lines unless asked otherwise.
  const logger = createLogger({ name: "cotal-worker", format: logFormat ?? envFormat ?? "json" });
  // A service is scraped: health and metrics on loopback 9464 unless the environment says otherwise.
  const overrides: WorkerOverrides = { ...args, ...(process.env.COTAL_WORKER_METRICS_PORT === undefined ? { http: { host: "127.0.0.1", port: 9464 } } : {}) };
  process.exitCode = await runWorkerService({ root: resolveRoot(args.root), overrides, logger });
} catch (err) {
  if (isJobsError(err) || isSagaError(err)) {
    refuse(`${err.message} [${err.code}]`);
    if (err.exit) refuse(`  next: ${err.exit}`);
    process.exitCode = isJobsError(err, "redis-unreachable") ? 6 : 2;
  } else {
    refuse(`unexpected error: ${(err as Error)?.stack ?? String(err)}`);
    process.exitCode = 1;
  }
}
