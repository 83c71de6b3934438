import type { JobsErrorCode } from "@cotal/jobs/errors";
import type { SagaErrorCode } from "@cotal/saga";

/** Exit codes are a documented contract (README "Exit codes"); group codes by what the operator does next. */
export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  refused: 3,
  busy: 4,
  notFound: 5,
  broker: 6,
  unproven: 7,
  io: 8,
  jobs: 9,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const BY_CODE: Record<SagaErrorCode, ExitCode> = {
  "invalid-space-name": EXIT.usage,
  "invalid-argument": EXIT.usage,
  "invalid-seed": EXIT.refused,
  "invalid-jwt": EXIT.refused,
  "foreign-operator": EXIT.refused,
  "missing-broker-trust": EXIT.refused,
  "system-seed-absent": EXIT.refused,
  "corrupt-record": EXIT.refused,
  "root-missing": EXIT.notFound,
  "render-refused": EXIT.refused,
  "inventory-corrupt": EXIT.refused,
  "resume-refused": EXIT.refused,
  "divergence": EXIT.refused,
  "direction-required": EXIT.refused,
  "confirmation-required": EXIT.refused,
  "digest-mismatch": EXIT.refused,
  "journal-blocked": EXIT.refused,
  "lock-held": EXIT.busy,
  "lock-lost": EXIT.busy,
  "lease-held": EXIT.busy,
  "conflict": EXIT.busy,
  "rolled-back": EXIT.busy,
  "live-process": EXIT.busy,
  "space-not-found": EXIT.notFound,
  "space-exists": EXIT.notFound,
  "nats-server-missing": EXIT.broker,
  "broker-running": EXIT.broker,
  "broker-not-running": EXIT.broker,
  "broker-start-failed": EXIT.broker,
  "broker-unreachable": EXIT.broker,
  "inventory-unreachable": EXIT.broker,
  "inventory-busy": EXIT.busy,
  "reload-unproven": EXIT.unproven,
  "lease-lost": EXIT.unproven,
  "io": EXIT.io,
  "reap-incomplete": EXIT.io,
  "cut-required": EXIT.broker,
  "attempt-pending": EXIT.refused,
  "store-inventory": EXIT.refused,
  "artifact-invalid": EXIT.refused,
  "account-mismatch": EXIT.refused,
  "restore-verify-failed": EXIT.refused,
  "quota-overcommit": EXIT.refused,
  "fd-budget": EXIT.refused,
  "record-too-large": EXIT.refused,
  "restore-target-not-empty": EXIT.notFound,
  "snapshot-failed": EXIT.broker,
};

export function exitCodeFor(code: SagaErrorCode): ExitCode {
  return BY_CODE[code];
}

/** The job layer's refusals, in the same groups; 9 is queued work that did not finish. */
const BY_JOBS_CODE: Record<JobsErrorCode, ExitCode> = {
  "invalid-payload": EXIT.usage,
  "timeout": EXIT.busy,
  "redis-unreachable": EXIT.broker,
  "job-failed": EXIT.jobs,
  "job-lost": EXIT.jobs,
};

export function exitCodeForJobs(code: JobsErrorCode): ExitCode {
  return BY_JOBS_CODE[code];
}
