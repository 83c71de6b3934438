import type { HelpTable } from "./types.js";

/** The queue: worker, jobs status/schedules/unschedule (docs/commands/jobs.md). */
export const JOBS_HELP: HelpTable = {
  "worker": {
    summary: "process this root's queued lifecycle jobs until SIGTERM (which drains)",
    examples: ["cotal worker", "cotal worker --metrics-port 9464 --metrics-host 0.0.0.0", "cotal --root /srv/cotal worker --concurrency 500 --batch-size 250"],
    errors: ["root-missing", "invalid-payload", "redis-unreachable"],
  },
  "jobs status": {
    summary: "jobs per state per queue, attached workers, failures, each schedule's last run",
    examples: ["cotal jobs status", "cotal --root /srv/cotal jobs status --json"],
    errors: ["root-missing", "redis-unreachable"],
  },
  "jobs schedules": {
    summary: "every backup schedule of this root: cadence, directory, next and last run",
    examples: ["cotal jobs schedules", "cotal jobs schedules --json"],
    errors: ["root-missing", "redis-unreachable"],
  },
  "jobs unschedule": {
    summary: "remove a space's backup schedule; an absent one is a no-op success",
    examples: ["cotal jobs unschedule alpha", "cotal --root /srv/cotal jobs unschedule alpha --json"],
    errors: ["invalid-space-name", "root-missing", "redis-unreachable"],
  },
};
