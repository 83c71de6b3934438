import { CliError } from "./errors.js";
import { isJobsError } from "@cotal/jobs/errors";
import { isSagaError } from "@cotal/saga";
import { EXIT, exitCodeFor, exitCodeForJobs, type ExitCode } from "./exit-codes.js";

/** Last line of defence: no nkeys seed (S + role + base32) ever reaches a terminal or a log. */
const SEED = /\bS[OAUNC][A-Z2-7]{50,}\b/g;
export function redact(text: string): string {
  return text.replace(SEED, "[seed redacted]");
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
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (asJson) json({ error: { code: "internal", message: error instanceof Error ? error.message : String(error), exit: null } });
  else {
    err(`cotal: unexpected error: ${message}`);
    err("  next: run the command again with COTAL_DEBUG=1 and report the output");
  }
  return EXIT.internal;
}
