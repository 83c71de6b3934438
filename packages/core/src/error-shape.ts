import { ERROR_TABLE, type ExitCode } from "./error-table.js";
import { isCotalError, RERUN, type ErrorCode } from "./errors.js";

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


const FS_HINTS: Record<string, string> = {
  EACCES: "check the ownership and permissions of that path (cotal writes its root as the user that runs it)",
  EPERM: "check the ownership and permissions of that path",
  EROFS: "the file system is read-only: remount it read-write, or use a root elsewhere (--root DIR)",
  ENOSPC: `${RERUN}   # once the disk has free space (nothing past the failed write happened)`,
  EDQUOT: `${RERUN}   # once the disk quota has room`,
  EFBIG: `${RERUN}   # once the file size limit (ulimit -f) lets the write through`,
  ENOTDIR: "a path component is not a directory: check --root",
  ELOOP: "the root is a symlink loop: pass --root <real path>",
  EMFILE: `ulimit -n 65536 && ${RERUN}   # too many open files`,
};

/**
 * Where an error is reported. `argv` is the failed command's arguments after `cotal`, as the CLI will
 * print them (its root named: docs/refusals.md, "Printed commands"); `rerun` a fixed line instead (the
 * jobs print `cotal jobs status`).
 */
export interface ReportContext {
  argv?: readonly string[];
  rerun?: string;
  /** The root the failed command ran on: every `cotal …` of a `next` that names none gets it (nameRoot). */
  root?: string;
}

/**
 * `next` with `--root <root>` in every `cotal …` command that names no root of its own, so the line
 * runs as printed from any directory (docs/refusals.md, "Printed commands"). Commands are the parts
 * between `&&`, `||`, `;` and a trailing `#` comment.
 */
export function nameRoot(next: string, root: string): string {
  const hash = next.search(/\s#/);
  const [code, comment] = hash < 0 ? [next, ""] : [next.slice(0, hash), next.slice(hash)];
  const parts = code.split(/(&&|\|\||;)/);
  const named = parts.map((part) => (/^(&&|\|\||;)$/.test(part) || /(^|\s)--root(\s|=)/.test(part) ? part : part.replace(/^(\s*)cotal\s(?!--root)/, `$1cotal --root ${shellWord(root)} `)));
  return `${named.join("")}${comment}`;
}

/** One argument as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellWord(arg: string): string {
  return /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * `argv` with `changes` applied (error.ts rerunWith): a flag's value replaced wherever it stands
 * (`--out X` or `--out=X`), added at the end when absent, dropped for `null`; then as one shell line.
 */
export function renderRerun(argv: readonly string[], changes: Readonly<Record<string, string | true | null>> = {}): string {
  const out = [...argv];
  for (const [flag, value] of Object.entries(changes)) {
    const at = out.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
    const takesValue = at >= 0 && out[at] === flag && value !== true && out[at + 1] !== undefined && !out[at + 1]?.startsWith("--");
    const width = at < 0 ? 0 : takesValue ? 2 : 1;
    const replacement = value === null ? [] : value === true ? [flag] : [flag, value];
    if (at >= 0) out.splice(at, width, ...replacement);
    else out.push(...replacement);
  }
  return ["cotal", ...out].map(shellWord).join(" ");
}

const RERUN_WITH = /\{rerun:([A-Za-z0-9_-]*)\}/g;

/** Every RERUN and rerunWith token of `text` as the operator's own command line. */
function renderNext(text: string, ctx: ReportContext): string {
  const plain = ctx.rerun ?? (ctx.argv ? renderRerun(ctx.argv) : "<the same command>");
  const rendered = text
    .replace(RERUN_WITH, (_, enc: string) => (ctx.argv ? renderRerun(ctx.argv, JSON.parse(Buffer.from(enc, "base64url").toString("utf8")) as Record<string, string | true | null>) : plain))
    .replaceAll(RERUN, plain);
  return ctx.root ? nameRoot(rendered, ctx.root) : rendered;
}

function shape(code: ErrorCode, message: string, next: string | undefined, details: Record<string, unknown> | undefined, ctx: ReportContext): ErrorShape {
  const entry = ERROR_TABLE[code];
  const text = next ?? entry.next ?? null;
  return { code, message, next: text === null ? null : renderNext(text, ctx), exit: entry.exit, retriable: entry.retriable, details: details ?? null };
}

/** Any thrown value, typed: a coded error as itself, an OS file error as `io` with its path, the rest `internal`. */
export function describeError(err: unknown, ctx: ReportContext = {}): ErrorShape {
  if (isCotalError(err)) return shape(err.code, err.message, err.next, err.details, ctx);
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
