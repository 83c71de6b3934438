import { isSagaError, type SagaErrorCode } from "@cotal/saga";
import { UnrecoverableError } from "bullmq";
import { isJobsError } from "./errors.js";

/**
 * Saga refusals a later attempt can get past: another writer, a crashed writer's claim rolled back,
 * a broker restarting. Everything else (bad input, foreign or corrupt trust) fails the job for good.
 */
const RETRIABLE: ReadonlySet<SagaErrorCode> = new Set<SagaErrorCode>([
  "lock-held",
  "lock-lost",
  "lease-held",
  "lease-lost",
  "conflict",
  "rolled-back",
  "broker-not-running",
  "broker-unreachable",
  "inventory-unreachable",
  "inventory-busy",
  "reload-unproven",
  "io",
]);

export function isRetriable(err: unknown): boolean {
  if (isSagaError(err)) return RETRIABLE.has(err.code);
  if (isJobsError(err)) return err.code === "redis-unreachable" || err.code === "timeout";
  return true; // an unexpected error may be transient; attempts bound it
}

/** The error a processor throws: "[code] message (next: …)"; UnrecoverableError skips BullMQ's retries. */
export function toJobFailure(err: unknown): Error {
  const code = isSagaError(err) || isJobsError(err) ? err.code : "internal";
  const next = isSagaError(err) || isJobsError(err) ? err.next : undefined;
  const text = `[${code}] ${(err as Error)?.message ?? String(err)}${next ? ` (next: ${next})` : ""}`;
  return isRetriable(err) ? new Error(text) : new UnrecoverableError(text);
}
