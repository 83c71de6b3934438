/**
 * Refusals of the job layer. Imports only the core's error contract (`@cotal/saga/errors`), so
 * the CLI can map codes at start-up without loading ioredis or BullMQ (`@cotal/jobs/errors`).
 * The codes, their exits and their retriability are rows of the core's ERROR_TABLE.
 */
import type { JobsErrorCode } from "@cotal/saga/errors";

export type { JobsErrorCode };

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
