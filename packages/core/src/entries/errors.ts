// @cotal/core/errors: the error contract without nats.js, so the CLI's start-up and the job layer stay light.
export {
  CotalError,
  JOBS_ERROR_CODES,
  SAGA_ERROR_CODES,
  isCotalError,
  rerunWith,
  usageError,
  type ErrorCode,
} from "../errors.js";
export { ERROR_TABLE, EXIT, isErrorCode, type ExitCode } from "../error-table.js";
export { describeError, errorDocument, renderRerun, shellWord, type ReportContext } from "../error-shape.js";
export { redactSeeds } from "../redact.js";
