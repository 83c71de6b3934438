/**
 * Every failure the harness raises. The code is the contract tests branch on; the message is for
 * the person reading a red test, so it carries the server's log tail whenever one exists.
 */
export type HarnessErrorCode =
  | "start-timeout"
  | "exited"
  | "port-unavailable"
  | "docker-unavailable"
  | "invalid-state"
  | "invalid-argument"
  | "timeout";

export interface HarnessErrorOptions {
  cause?: unknown;
  /** The last lines of the server log (and stderr) when the failure involves a server. */
  logTail?: string;
}

export class HarnessError extends Error {
  override readonly name = "HarnessError";
  readonly code: HarnessErrorCode;
  readonly logTail: string | undefined;

  constructor(code: HarnessErrorCode, message: string, options: HarnessErrorOptions = {}) {
    const full = options.logTail ? `${message}\n--- log tail ---\n${options.logTail}` : message;
    super(full, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.logTail = options.logTail || undefined;
  }
}

export function isHarnessError(err: unknown, code?: HarnessErrorCode): err is HarnessError {
  return err instanceof HarnessError && (code === undefined || err.code === code);
}
