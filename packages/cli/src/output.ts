import { CliError } from "./errors.js";
import { isJobsError } from "@cotal/jobs/errors";
import { isSagaError, redactSeeds } from "@cotal/saga";
import { EXIT, exitCodeFor, exitCodeForJobs, type ExitCode } from "./exit-codes.js";

/** Last line of defence: no nkeys seed (S + role + base32) ever reaches a terminal or a log. */
export const redact = redactSeeds;

export function out(text: string): void {
  process.stdout.write(`${redact(text)}\n`);
}

export function err(text: string): void {
  process.stderr.write(`${redact(text)}\n`);
}

export function json(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}


/** The one place errors become output and exit codes; every refusal names what to run next. */
export function report(error: unknown, asJson: boolean): ExitCode {
  if (isSagaError(error) || isJobsError(error)) {
    const code = isSagaError(error) ? exitCodeFor(error.code) : exitCodeForJobs(error.code);
    if (asJson) json({ error: { code: error.code, message: error.message, exit: error.exit ?? null, details: error.details ?? null } });
    else {
      err(`cotal: ${error.message} [${error.code}]`);
      if (error.exit) err(`  next: ${error.exit}`);
    }
    return code;
  }
  if (error instanceof CliError) {
    if (asJson) json({ error: { code: "usage", message: error.message, exit: error.exit ?? "cotal --help" } });
    else {
      err(`cotal: ${error.message} [usage]`);
      err(`  next: ${error.exit ?? "cotal --help"}`);
    }
    return EXIT.usage;
  }
  const fsError = fileSystemError(error);
  if (fsError) {
    if (asJson) json({ error: { code: "io", message: fsError.message, exit: fsError.next, details: { errno: fsError.errno, path: fsError.path ?? null } } });
    else {
      err(`cotal: ${fsError.message} [io]`);
      err(`  next: ${fsError.next}`);
    }
    return EXIT.io;
  }
  const message = error instanceof Error ? (process.env.COTAL_DEBUG === "1" ? (error.stack ?? error.message) : error.message) : String(error);
  if (asJson) json({ error: { code: "internal", message: error instanceof Error ? error.message : String(error), exit: null } });
  else {
    err(`cotal: unexpected error: ${message}`);
    err("  next: run the command again with COTAL_DEBUG=1 and report the output");
  }
  return EXIT.internal;
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

/** An operating-system file error the core did not type: reported as exit 8 with its path, never a stack trace. */
function fileSystemError(error: unknown): { message: string; next: string; errno: string; path?: string } | undefined {
  const e = error as NodeJS.ErrnoException | undefined;
  const hint = e && typeof e.code === "string" ? FS_HINTS[e.code] : undefined;
  if (!e || !hint || !e.code) return undefined;
  return { message: `${e.syscall ?? "file operation"} failed on ${e.path ?? "a path under the root"}: ${e.code}`, next: hint, errno: e.code, ...(e.path ? { path: e.path } : {}) };
}
