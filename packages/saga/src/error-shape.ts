import { ERROR_TABLE, isErrorCode, type ErrorCode, type ExitCode } from "./error-table.js";
import { RERUN } from "./errors.js";

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
  ENOSPC: `${RERUN}   # once the disk has free space (nothing past the failed write happened)`,
  EDQUOT: `${RERUN}   # once the disk quota has room`,
  ENOTDIR: "a path component is not a directory: check --root",
  ELOOP: "the root is a symlink loop: pass --root <real path>",
  EMFILE: `ulimit -n 65536 && ${RERUN}   # too many open files`,
};

/** Where an error is reported: `rerun` is the failed command as the operator typed it (the CLI knows it). */
export interface ReportContext {
  rerun?: string;
}

function shape(code: ErrorCode, message: string, next: string | undefined, details: Record<string, unknown> | undefined, ctx: ReportContext): ErrorShape {
  const entry = ERROR_TABLE[code];
  const text = next ?? entry.next ?? null;
  return { code, message, next: text === null ? null : text.replaceAll(RERUN, ctx.rerun ?? "<the same command>"), exit: entry.exit, retriable: entry.retriable, details: details ?? null };
}

/** Any thrown value, typed: a coded error as itself, an OS file error as `io` with its path, the rest `internal`. */
export function describeError(err: unknown, ctx: ReportContext = {}): ErrorShape {
  if (isCoded(err)) return shape(err.code, err.message, err.next, err.details, ctx);
  const e = err as NodeJS.ErrnoException | undefined;
  const hint = e && typeof e.code === "string" ? FS_HINTS[e.code] : undefined;
  if (e && hint && e.code) {
    const message = `${e.syscall ?? "file operation"} failed on ${e.path ?? "a path under the root"}: ${e.code}`;
    return shape("io", message, hint, { errno: e.code, path: e.path ?? null }, ctx);
  }
  return shape("internal", err instanceof Error ? err.message : String(err), undefined, undefined, ctx);
}

/** The `--json` document of a failed command; `extra` rides alongside (e.g. reconcile's report). */
export function errorDocument(err: unknown, extra: Record<string, unknown> = {}, ctx: ReportContext = {}): { error: ErrorShape } & Record<string, unknown> {
  return { ...extra, error: describeError(err, ctx) };
}
