/**
 * Every refusal cotal's core can raise. The code is the stable contract (the CLI maps it to an
 * exit code); the message is for people; `next` is the runnable next step an operator should take.
 */
export const SAGA_ERROR_CODES = [
  // input
  "invalid-space-name",
  "invalid-argument",
  // trust material
  "invalid-seed",
  "invalid-jwt",
  "foreign-operator",
  "missing-broker-trust",
  "system-seed-absent",
  // the root on disk
  "corrupt-record",
  "root-missing",
  "io",
  "space-not-found",
  "user-not-found",
  "space-exists",
  "render-refused",
  // the maintenance lock
  "lock-held",
  "lock-lost",
  // the broker process
  "nats-server-missing",
  "broker-running",
  "broker-not-running",
  "broker-start-failed",
  "broker-unreachable",
  // an offline verb on a cluster root: the record lives in the nodes' R3 buckets
  "cluster-offline",
  // the inventory and the saga
  "inventory-unreachable",
  "inventory-busy",
  "inventory-corrupt",
  "conflict",
  "lease-held",
  "lease-lost",
  "reload-unproven",
  "cluster-unproven",
  "digest-mismatch",
  "resume-refused",
  "divergence",
  "rolled-back",
  "direction-required",
  "confirmation-required",
  "journal-blocked",
  "live-process",
  "reap-incomplete",
  // offline backup / restore (the preserve-state cut)
  "cut-required",
  "attempt-pending",
  "store-inventory",
  "artifact-invalid",
  "account-mismatch",
  "restore-target-not-empty",
  "restore-verify-failed",
  "snapshot-failed",
  // quotas
  "quota-overcommit",
  // local services (cotal dashboard)
  "port-in-use",
  // broker limits
  "fd-budget",
  "record-too-large",
] as const;

export type SagaErrorCode = (typeof SAGA_ERROR_CODES)[number];

/** The job layer's codes (@cotal/jobs sits above the core). */
export const JOBS_ERROR_CODES = [
  // Redis is down or refuses us: an environment problem, like an unreachable broker
  "redis-unreachable",
  // a job payload or an option failed validation; nothing was enqueued
  "invalid-payload",
  // waiting for queued work took longer than allowed; the jobs keep running
  "timeout",
  // some queued jobs failed for good (reasons in `details.failed`)
  "job-failed",
  // jobs vanished from Redis without completing (a flush or a restart without persistence)
  "job-lost",
] as const;
export type JobsErrorCode = (typeof JOBS_ERROR_CODES)[number];

/** The CLI's own: a malformed command line, and anything nobody typed (a bug, or an unforeseen fault). */
export const CLI_ERROR_CODES = ["usage", "internal"] as const;
export type CliErrorCode = (typeof CLI_ERROR_CODES)[number];

/** Every code cotal reports, from any layer: each has its row in ERROR_TABLE (error-table.ts). */
export type ErrorCode = SagaErrorCode | JobsErrorCode | CliErrorCode;

/**
 * Stands in a `next` for the very command that failed (with every flag the operator gave it): the
 * CLI prints its own command line there, so "run it again" is a line to paste (error-shape.ts).
 */
export const RERUN = "{rerun}";

/**
 * Stands in a `next` for the failed command with some flags changed and every other flag kept
 * (`rerunWith({ "--max-disk": "512MiB" })`; `true` adds a bare flag, `null` drops one): the CLI prints
 * the operator's own command line with those edits (error-shape.ts, renderRerun).
 */
export function rerunWith(changes: Readonly<Record<string, string | true | null>>): string {
  return `{rerun:${Buffer.from(JSON.stringify(changes)).toString("base64url")}}`;
}

/** `next` for a refusal that clears once pid `pid` is gone: wait for it, then the same command. */
export function afterPid(pid: number): string {
  return `while kill -0 ${pid} 2>/dev/null; do sleep 1; done; ${RERUN}`;
}

export interface CotalErrorOptions {
  /** The command an operator should run next (printed as-is by the CLI). */
  next?: string;
  /** Structured context for --json output; never carries seeds. */
  details?: Record<string, unknown>;
  cause?: unknown;
}

// Recognised by a registered symbol, not by class identity: a test runner or a bundle may load two
// copies of this module, and an error from one must still be itself in the other.
const COTAL_ERROR = Symbol.for("cotal.error");

/** The one error class of every layer (core, jobs, CLI): a typed code, a message for people, the next command. */
export class CotalError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = "CotalError";
  readonly [COTAL_ERROR] = true;
  readonly code: C;
  readonly next: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: C, message: string, options: CotalErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.next = options.next;
    this.details = options.details;
  }
}

export function isCotalError(err: unknown, code?: ErrorCode): err is CotalError {
  return err instanceof Error && (err as { [COTAL_ERROR]?: unknown })[COTAL_ERROR] === true && (code === undefined || (err as CotalError).code === code);
}

/** A malformed command line (exit 2): nothing was read or written; `next` is the corrected command or its --help. */
export function usageError(message: string, next?: string): CotalError<"usage"> {
  return new CotalError("usage", message, next === undefined ? {} : { next });
}
