import { ERROR_TABLE, type ErrorCode, type ExitCode } from "@cotal/core/errors";

// The numbers and the code → exit mapping live in the core's error table (docs/refusals.md).
export { EXIT, type ExitCode } from "@cotal/core/errors";

export function exitCodeFor(code: ErrorCode): ExitCode {
  return ERROR_TABLE[code].exit;
}
