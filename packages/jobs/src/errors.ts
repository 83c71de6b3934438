/**
 * Refusals of the job layer. Imports nothing heavy, so the CLI can map codes to exit codes at
 * start-up without loading ioredis or BullMQ (`@cotal/jobs/errors`).
 */
export type JobsErrorCode =
  // Redis is down or refuses us: an environment problem, like an unreachable broker
  | "redis-unreachable"
  // a job payload or an option failed validation; nothing was enqueued
  | "invalid-payload"
  // waiting for queued work took longer than allowed; the jobs keep running
  | "timeout"
  // some queued jobs failed for good (reasons in `details.failed`)
  | "job-failed"
  // jobs vanished from Redis without completing (a flush or a restart without persistence)
  | "job-lost";

export interface JobsErrorOptions {
  /** The command an operator should run next. */
  next?: string;
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class JobsError extends Error {
  override readonly name = "JobsError";
  readonly code: JobsErrorCode;
  readonly next: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: JobsErrorCode, message: string, options: JobsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.next = options.next;
    this.details = options.details;
  }
}

export function isJobsError(err: unknown, code?: JobsErrorCode): err is JobsError {
  return err instanceof JobsError && (code === undefined || err.code === code);
}
