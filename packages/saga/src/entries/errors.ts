// `@cotal/saga/errors`: the error contract alone (types, the table, the one shape), loadable
// without nats.js, so the job layer's error module stays light.
export { RERUN, SAGA_ERROR_CODES, SagaError, afterPid, isSagaError, rerunWith, type SagaErrorCode, type SagaErrorOptions } from "../errors.js";
export {
  CLI_ERROR_CODES,
  ERROR_TABLE,
  EXIT,
  JOBS_ERROR_CODES,
  errorEntry,
  isErrorCode,
  type CliErrorCode,
  type ErrorCode,
  type ErrorEntry,
  type ExitCode,
  type JobsErrorCode,
} from "../error-table.js";
export { describeError, errorDocument, nameRoot, renderRerun, shellWord, type ErrorShape, type ReportContext } from "../error-shape.js";
export { redactSeeds } from "../redact.js";
