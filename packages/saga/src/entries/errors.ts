// `@cotal/saga/errors`: the error contract alone (the one class, the codes, the table, the one shape),
// loadable without nats.js, so the job layer and the CLI's start-up stay light.
export {
  CLI_ERROR_CODES,
  CotalError,
  JOBS_ERROR_CODES,
  RERUN,
  SAGA_ERROR_CODES,
  afterPid,
  isCotalError,
  rerunWith,
  usageError,
  type CliErrorCode,
  type CotalErrorOptions,
  type ErrorCode,
  type JobsErrorCode,
  type SagaErrorCode,
} from "../errors.js";
export { ERROR_TABLE, EXIT, errorEntry, isErrorCode, type ErrorEntry, type ExitCode } from "../error-table.js";
export { describeError, errorDocument, nameRoot, renderRerun, shellWord, type ErrorShape, type ReportContext } from "../error-shape.js";
export { redactSeeds } from "../redact.js";
