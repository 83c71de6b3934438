#!/usr/bin/env node
// The cotal worker as a service (systemd unit, compose): settings from the environment
// (COTAL_ROOT, REDIS_URL, COTAL_WORKER_*, COTAL_JOBS_*) and `--concurrency N`.
import { isJobsError, runWorkerService, type WorkerOverrides } from "@cotal/jobs";
import { isSagaError, resolveRoot } from "@cotal/saga";
import { workerArgs } from "./args.js";

const log = (line: string): void => void process.stderr.write(`cotal-worker: ${line}\n`);

try {
  const args = workerArgs(process.argv.slice(2));
  // A service is scraped: health and metrics on loopback 9464 unless the environment says otherwise.
  const overrides: WorkerOverrides = { ...args, ...(process.env.COTAL_WORKER_METRICS_PORT === undefined ? { http: { host: "127.0.0.1", port: 9464 } } : {}) };
  process.exitCode = await runWorkerService({ root: resolveRoot(args.root), overrides, log });
} catch (err) {
  if (isJobsError(err) || isSagaError(err)) {
    log(`${err.message} [${err.code}]`);
    if (err.next) log(`  next: ${err.next}`);
    process.exitCode = isJobsError(err, "redis-unreachable") ? 6 : 2;
  } else {
    log(`unexpected error: ${(err as Error)?.stack ?? String(err)}`);
    process.exitCode = 1;
  }
}
