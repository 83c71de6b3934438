import { ERROR_TABLE, isErrorCode, type ErrorCode, type ExitCode } from "./error-table.js";

/**
 * The one shape every reported error takes: `--json` prints `{ error: ErrorShape }`, the text
 * output and the worker's log print its message and `next:`, the jobs decide retries from it.
 * Pure: the caller prints.
 */
export interface ErrorShape {
  code: ErrorCode;
  message: string;
  /** The command to run next: the error's own, else the table's default for its code. */
  next: string | null;
  exit: ExitCode;
  retriable: boolean;
  details: Record<string, unknown> | null;
}

/** What SagaError, JobsError and CliError share; the latter two live above the core. */
interface CodedError extends Error {
  code: ErrorCode;
  next?: string | undefined;
  details?: Record<string, unknown> | undefined;
}

// By name, not class: the jobs and CLI classes sit in packages that import this one.
const CODED = new Set(["SagaError", "JobsError", "CliError"]);

function isCoded(err: unknown): err is CodedError {
  return err instanceof Error && CODED.has(err.name) && isErrorCode((err as { code?: unknown }).code);
}

const FS_HINTS: Record<string, string> = {
  EACCES: "check the ownership and permissions of that path (cotal writes its root as the user that runs it)",
  EPERM: "check the ownership and permissions of that path",
  EROFS: "the file system is read-only: remount it read-write, or use a root elsewhere (--root DIR)",
  ENOSPC: "the disk is full: free space, then run the command again (nothing past the failed write happened)",
  EDQUOT: "the disk quota is exhausted: free space, then run the command again",
  ENOTDIR: "a path component is not a directory: check --root",
  ELOOP: "the root is a symlink loop: pass --root <real path>",
  EMFILE: "too many open files: raise `ulimit -n`, then run the command again",
};

function shape(code: ErrorCode, message: string, next: string | undefined, details: Record<string, unknown> | undefined): ErrorShape {
  const entry = ERROR_TABLE[code];
  return { code, message, next: next ?? entry.next ?? null, exit: entry.exit, retriable: entry.retriable, details: details ?? null };
}

/** Any thrown value, typed: a coded error as itself, an OS file error as `io` with its path, the rest `internal`. */
export function describeError(err: unknown): ErrorShape {
  if (isCoded(err)) return shape(err.code, err.message, err.next, err.details);
  const e = err as NodeJS.ErrnoException | undefined;
  const hint = e && typeof e.code === "string" ? FS_HINTS[e.code] : undefined;
  if (e && hint && e.code) {
    const message = `${e.syscall ?? "file operation"} failed on ${e.path ?? "a path under the root"}: ${e.code}`;
    return shape("io", message, hint, { errno: e.code, path: e.path ?? null });
  }
  return shape("internal", err instanceof Error ? err.message : String(err), undefined, undefined);
}

/** The `--json` document of a failed command; `extra` rides alongside (e.g. reconcile's report). */
export function errorDocument(err: unknown, extra: Record<string, unknown> = {}): { error: ErrorShape } & Record<string, unknown> {
  return { ...extra, error: describeError(err) };
}
