import { describeError } from "@cotal/core/errors";
import { UnrecoverableError } from "bullmq";

/**
 * Whether a later attempt can get past the error: the core's ERROR_TABLE decides per code
 * (another writer, a crashed writer's claim rolled back, a broker restarting); bad input and
 * foreign or corrupt trust fail the job for good. An untyped error counts as `internal`.
 */
export function isRetriable(err: unknown): boolean {
  return describeError(err).retriable;
}

/**
 * The error a processor throws: "[code] message (next: …)"; UnrecoverableError skips BullMQ's retries.
 * A job has no command line of its own to re-run: its status is where the operator picks it up.
 */
export function toJobFailure(err: unknown): Error {
  const e = describeError(err, { rerun: "cotal jobs status" });
  const text = `[${e.code}] ${e.message}${e.next ? ` (next: ${e.next})` : ""}`;
  return e.retriable ? new Error(text) : new UnrecoverableError(text);
}

