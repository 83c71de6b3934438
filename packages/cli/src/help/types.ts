import type { ErrorCode } from "@cotal/core/errors";

/**
 * The help of one verb beyond what commander prints (issue #31): a one-line summary, 1-3 examples
 * that run as written, and the error codes the verb can end with (their exit numbers come from
 * ERROR_TABLE, so the help cannot drift from the contract). `ok`, `usage` and `internal` are implied.
 */
export interface VerbHelp {
  readonly summary: string;
  readonly examples: readonly string[];
  readonly errors: readonly ErrorCode[];
}

/** Keyed by command path, as typed after `cotal`: "space add", "worker". */
export type HelpTable = Readonly<Record<string, VerbHelp>>;
