import { resolve } from "node:path";
import { describeError, redactSeeds, renderRerun, shellWord, type ExitCode, type ReportContext } from "@cotal/core/errors";

/** Last line of defence: no nkeys seed ever reaches a terminal or a log (the rule lives in saga/redact.ts). */
export function redact(text: string): string {
  return redactSeeds(text);
}

export function out(text: string): void {
  process.stdout.write(`${redact(text)}\n`);
}

export function err(text: string): void {
  process.stderr.write(`${redact(text)}\n`);
}

export function json(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

export { shellWord };

let invocation: readonly string[] | undefined;

/**
 * `argv` as a printed command must carry it: the root named by its absolute path first (`--root`, else
 * COTAL_ROOT, else ./.cotal, resolved here), so the line runs as printed from any directory
 * (docs/refusals.md, "Printed commands"); every other argument as the operator typed it.
 */
export function printableArgv(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string[] {
  let root: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (a === "--root" && i + 1 < argv.length) root = argv[++i];
    else if (a.startsWith("--root=")) root = a.slice("--root=".length);
    else rest.push(a);
  }
  return ["--root", resolve(cwd, root ?? env.COTAL_ROOT ?? ".cotal"), ...rest];
}

/** Remembers the command line this process runs, so a `next` that says "run it again" prints it. */
export function setInvocation(argv: readonly string[]): void {
  invocation = printableArgv(argv);
}

/** The command line this process runs, as printed (`cotal --root … <argv>`). */
export function invocationLine(): string {
  return renderRerun(invocation ?? []);
}

export function reportContext(): ReportContext {
  return invocation === undefined ? {} : { argv: invocation, root: invocation[1] as string };
}

/** The one place errors become output and exit codes; every refusal names what to run next. */
export function report(error: unknown, asJson: boolean): ExitCode {
  const e = describeError(error, reportContext());
  if (asJson) json({ error: e });
  else if (e.code === "internal") {
    const debug = process.env.COTAL_DEBUG === "1" && error instanceof Error ? error.stack : undefined;
    err(`cotal: unexpected error: ${debug ?? e.message}`);
    if (e.next) err(`  next: ${e.next}`);
  } else {
    err(`cotal: ${e.message} [${e.code}]`);
    if (e.next) err(`  next: ${e.next}`);
  }
  return e.exit;
}
