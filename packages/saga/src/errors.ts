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

export interface SagaErrorOptions {
  /** The command an operator should run next (printed as-is by the CLI). */
  next?: string;
  /** Structured context for --json output; never carries seeds. */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class SagaError extends Error {
  override readonly name = "SagaError";
  readonly code: SagaErrorCode;
  readonly next: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: SagaErrorCode, message: string, options: SagaErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.next = options.next;
    this.details = options.details;
  }
}

export function isSagaError(err: unknown, code?: SagaErrorCode): err is SagaError {
  return err instanceof SagaError && (code === undefined || err.code === code);
}
