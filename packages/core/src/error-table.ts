import { RERUN as THE_COMMAND, type ErrorCode } from "./errors.js";

/**
 * The error contract in one home (docs/refusals.md): for every code cotal can report, the exit
 * code the CLI and the worker end with, whether a later attempt can get past it (the jobs retry
 * exactly these), and the command to run next when the error carries none of its own. Pure.
 */

/** Exit codes are a documented contract (README "Exit codes"); grouped by what the operator does next. */
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


export interface ErrorEntry {
  readonly exit: ExitCode;
  /** A later attempt may succeed without anyone acting: another writer, a restarting broker, a busy disk. */
  readonly retriable: boolean;
  /** Printed when the error itself names no next command. */
  readonly next?: string;
}

const RERUN = THE_COMMAND;

// Keyed by every code: a code added to SAGA_ERROR_CODES without a row here does not compile.
export const ERROR_TABLE: { readonly [C in ErrorCode]: ErrorEntry } = {
  // input
  "usage": { exit: EXIT.usage, retriable: false, next: "cotal --help" },
  "invalid-space-name": { exit: EXIT.usage, retriable: false },
  "invalid-argument": { exit: EXIT.usage, retriable: false },
  "invalid-payload": { exit: EXIT.usage, retriable: false },
  // trust material and the root: someone must look before anything is written
  "invalid-seed": { exit: EXIT.refused, retriable: false },
  "invalid-jwt": { exit: EXIT.refused, retriable: false },
  "foreign-operator": { exit: EXIT.refused, retriable: false },
  "missing-broker-trust": { exit: EXIT.refused, retriable: false },
  "system-seed-absent": { exit: EXIT.refused, retriable: false },
  "corrupt-record": { exit: EXIT.refused, retriable: false },
  "render-refused": { exit: EXIT.refused, retriable: false, next: "cotal status" },
  "root-missing": { exit: EXIT.notFound, retriable: false, next: "cotal up --help   # no cotal root where it was looked for; cotal up --root creates one" },
  "space-not-found": { exit: EXIT.notFound, retriable: false, next: "cotal space list" },
  "user-not-found": { exit: EXIT.notFound, retriable: false, next: "cotal space list" },
  "space-exists": { exit: EXIT.notFound, retriable: false, next: "cotal space list" },
  "restore-target-not-empty": { exit: EXIT.notFound, retriable: false },
  // the file system: a full disk or a permission may be fixed between attempts
  "io": { exit: EXIT.io, retriable: true, next: `${THE_COMMAND}   # once the named path's permissions or free space are fixed` },
  "reap-incomplete": { exit: EXIT.io, retriable: false },
  // the maintenance lock and the writer lease: another writer, so wait and retry
  "lock-held": { exit: EXIT.busy, retriable: true, next: RERUN },
  "lock-lost": { exit: EXIT.busy, retriable: true, next: RERUN },
  "lease-held": { exit: EXIT.busy, retriable: true, next: RERUN },
  "lease-lost": { exit: EXIT.unproven, retriable: true, next: RERUN },
  "conflict": { exit: EXIT.busy, retriable: true, next: RERUN },
  "rolled-back": { exit: EXIT.busy, retriable: true, next: RERUN },
  "inventory-busy": { exit: EXIT.busy, retriable: true, next: RERUN },
  "live-process": { exit: EXIT.busy, retriable: false },
  "timeout": { exit: EXIT.busy, retriable: true, next: "cotal jobs status   # the jobs keep running" },
  // the broker process and the environment
  "nats-server-missing": { exit: EXIT.broker, retriable: false },
  "broker-running": { exit: EXIT.broker, retriable: false, next: "cotal down" },
  "broker-not-running": { exit: EXIT.broker, retriable: true, next: "cotal up --detach" },
  "broker-start-failed": { exit: EXIT.broker, retriable: false },
  "broker-unreachable": { exit: EXIT.broker, retriable: true, next: "cotal status   # is the broker running?" },
  "cluster-offline": { exit: EXIT.broker, retriable: false, next: `cotal up --detach && ${THE_COMMAND}   # on the running cluster` },
  "inventory-unreachable": { exit: EXIT.broker, retriable: true, next: "cotal status   # is the broker running?" },
  "cut-required": { exit: EXIT.broker, retriable: false, next: "cotal down --preserve-state" },
  "snapshot-failed": { exit: EXIT.broker, retriable: false },
  "port-in-use": { exit: EXIT.broker, retriable: false },
  "redis-unreachable": { exit: EXIT.broker, retriable: true, next: "bash infra/redis.sh start   # the refusal prints the script's absolute path and the URL's port; or point REDIS_URL at a running Redis" },
  // the saga's own refusals: the record, the disk and the server disagree, or a decision is owed
  "reload-unproven": { exit: EXIT.unproven, retriable: true, next: RERUN },
  "cluster-unproven": { exit: EXIT.unproven, retriable: false, next: `cotal up && ${THE_COMMAND}   # up restarts a stopped node` },
  "inventory-corrupt": { exit: EXIT.refused, retriable: false },
  "digest-mismatch": { exit: EXIT.refused, retriable: false, next: "cotal broker reconcile" },
  "resume-refused": { exit: EXIT.refused, retriable: false, next: "cotal broker reconcile" },
  "divergence": { exit: EXIT.refused, retriable: false, next: "cotal broker reconcile" },
  "direction-required": { exit: EXIT.refused, retriable: false, next: "cotal broker reconcile --adopt-disk   # or --adopt-kv" },
  "confirmation-required": { exit: EXIT.refused, retriable: false },
  "journal-blocked": { exit: EXIT.refused, retriable: false },
  // offline backup / restore
  "attempt-pending": { exit: EXIT.refused, retriable: false },
  "store-inventory": { exit: EXIT.refused, retriable: false },
  "artifact-invalid": { exit: EXIT.refused, retriable: false },
  "account-mismatch": { exit: EXIT.refused, retriable: false },
  "restore-verify-failed": { exit: EXIT.refused, retriable: false },
  // quotas
  "quota-overcommit": { exit: EXIT.refused, retriable: false },
  // broker limits: refused before any write; the fix is the operator's (README "Broker limits")
  "fd-budget": { exit: EXIT.refused, retriable: false },
  "record-too-large": { exit: EXIT.refused, retriable: false },
  // queued work that did not finish: the operator reads the reasons and re-runs
  "job-failed": { exit: EXIT.jobs, retriable: false, next: "cotal jobs status" },
  "job-lost": { exit: EXIT.jobs, retriable: false, next: THE_COMMAND },
  // nobody typed it: may be transient, so the jobs retry it (attempts bound that)
  "internal": { exit: EXIT.internal, retriable: true, next: `COTAL_DEBUG=1 ${THE_COMMAND}   # and report its output` },
};

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_TABLE, code);
}
