import { describeError, redactSeeds, type ExitCode, type ReportContext } from "@cotal/saga/errors";

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


/** One argument as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellWord(arg: string): string {
  return /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

let invocation: string | undefined;

/** Remembers the command line this process runs, so a `next` that says "run it again" prints it. */
export function setInvocation(argv: readonly string[]): void {
  invocation = ["cotal", ...argv].map(shellWord).join(" ");
}

export function reportContext(): ReportContext {
  return invocation === undefined ? {} : { rerun: invocation };
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
