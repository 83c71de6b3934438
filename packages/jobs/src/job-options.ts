import type { JobsOptions } from "bullmq";

/**
 * Retention: a completed job is removed at once, so a later re-add of the same id is accepted (and
 * runs as a no-op success); while a job is waiting, active or retrying, its id keeps a duplicate out.
 * Failed jobs stay a week for `cotal jobs status`; re-enqueueing removes a failed one first.
 */
export const DEFAULT_JOB_OPTIONS = {
  attempts: 6,
  backoff: { type: "exponential", delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
} as const satisfies JobsOptions;
