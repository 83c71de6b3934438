#!/usr/bin/env node
// The cotal worker as a service (systemd unit, compose): settings from the environment
// (COTAL_ROOT, REDIS_URL, COTAL_WORKER_*, COTAL_JOBS_*, COTAL_LOG_FORMAT) and `--concurrency N`.
import { createLogger, isLogFormat, runWorkerService, type WorkerOverrides } from "@cotal/jobs";
import { CotalError } from "@cotal/core";
import { guardsFromEnv, resolveRoot } from "@cotal/core/light";
import { describeError } from "@cotal/core/errors";
import { workerArgs } from "./args.js";

// Refusals stay plain stderr lines (`next:` included), whatever the log format: a person reads them.
const refuse = (line: string): void => void process.stderr.write(`cotal-worker: ${line}\n`);

try {
  const { logFormat, ...args } = workerArgs(process.argv.slice(2));
  const envFormat = process.env.COTAL_LOG_FORMAT;
  if (envFormat !== undefined && !isLogFormat(envFormat)) throw new CotalError("invalid-argument", `COTAL_LOG_FORMAT=${JSON.stringify(envFormat)} is not a log format`, { next: "COTAL_LOG_FORMAT=json   # or pretty" });
  // A service's stderr goes to journald or docker logs: JSON lines unless asked otherwise.
  // The worker's entry builds the guards (docs/ablation.md, test-only) and hands them down; the core never reads them.
  const guards = guardsFromEnv(process.env);
  const level = process.env.COTAL_LOG_LEVEL;
  const logger = createLogger({ name: "cotal-worker", format: logFormat ?? envFormat ?? "json", guards, ...(level === undefined ? {} : { level }) });
  // A service is scraped: health and metrics on port 9464 (COTAL_WORKER_METRICS_HOST, default loopback) unless the environment says otherwise.
  const overrides: WorkerOverrides = { ...args, ...(process.env.COTAL_WORKER_METRICS_PORT === undefined ? { http: { port: 9464 } } : {}) };
  process.exitCode = await runWorkerService({ root: resolveRoot(args.root, process.env), overrides, logger, guards, env: process.env });
} catch (err) {
  // The same shape and exit codes as the CLI (the core's error table): an unreachable Redis is 6, bad settings 2.
  const e = describeError(err);
  refuse(e.code === "internal" ? `unexpected error: ${(err as Error)?.stack ?? String(err)}` : `${e.message} [${e.code}]`);
  if (e.next) refuse(`  next: ${e.next}`);
  process.exitCode = e.exit;
}
