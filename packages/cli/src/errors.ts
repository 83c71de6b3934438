/** The CLI's own refusals (argument parsing); everything else arrives typed from saga or jobs. */
export type CliErrorCode = "usage";

export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    readonly code: CliErrorCode,
    message: string,
    /** The command to run next, printed as the refusal's `next:` line. */
    readonly next?: string,
  ) {
    super(message);
  }
}

/** A malformed command line: nothing was read or written. */
export class UsageError extends CliError {
  constructor(message: string, next?: string) {
    super("usage", message, next);
  }
}
