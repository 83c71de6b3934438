#!/usr/bin/env node
// The cotal worker as a service (systemd unit, compose): settings from the environment
// (COTAL_ROOT, REDIS_URL, COTAL_WORKER_*, COTAL_JOBS_*) and `--concurrency N`.
import { runWorkerService, type WorkerOverrides } from "@cotal/jobs";
import { resolveRoot } from "@cotal/saga";
import { describeError } from "@cotal/saga/errors";
import { workerArgs } from "./args.js";

const log = (line: string): void => void process.stderr.write(`cotal-worker: ${line}\n`);

try {
  const args = workerArgs(process.argv.slice(2));
  // A service is scraped: health and metrics on loopback 9464 unless the environment says otherwise.
  const overrides: WorkerOverrides = { ...args, ...(process.env.COTAL_WORKER_METRICS_PORT === undefined ? { http: { host: "127.0.0.1", port: 9464 } } : {}) };
  process.exitCode = await runWorkerService({ root: resolveRoot(args.root), overrides, log });
} catch (err) {
  // The same shape and exit codes as the CLI (the core's error table): an unreachable Redis is 6, bad settings 2.
  const e = describeError(err);
  log(e.code === "internal" ? `unexpected error: ${(err as Error)?.stack ?? String(err)}` : `${e.message} [${e.code}]`);
  if (e.next) log(`  next: ${e.next}`);
  process.exitCode = e.exit;
}
