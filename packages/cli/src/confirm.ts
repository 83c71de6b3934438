import { createInterface } from "node:readline/promises";
import { rerunWith, CotalError } from "@cotal/core/errors";

/**
 * The one home of the CLI's confirmations (`space rm`, `broker reconcile`'s typed count): a question is
 * asked only when a person can answer it (stdin and the prompt's stream are TTYs); everywhere else the
 * verb refuses `confirmation-required` before it touches anything and prints itself with `--yes`
 * (docs/refusals.md).
 */
export interface PromptIo {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
}

/** The process's terminal: questions go to stderr, so stdout stays the verb's result (`--json`). */
export const TERMINAL: PromptIo = { input: process.stdin, output: process.stderr };

/** Whether a person can answer a question on `io`. */
export function interactive(io: PromptIo = TERMINAL): boolean {
  return io.input.isTTY === true && io.output.isTTY === true;
}

/** Asks `question` once on `io` and returns the answer's line, trimmed ("" when the input ends first). */
export async function ask(question: string, io: PromptIo = TERMINAL): Promise<string> {
  const rl = createInterface({ input: io.input, output: io.output, terminal: false });
  try {
    const closed = new Promise<string>((resolve) => rl.once("close", () => resolve("")));
    return (await Promise.race([rl.question(question), closed])).trim();
  } finally {
    rl.close();
  }
}

/** A `[y/N]` question: only `y` or `yes` (any case) says yes; anything else, or no answer, says no. */
export async function askYesNo(question: string, io: PromptIo = TERMINAL): Promise<boolean> {
  return /^(y|yes)$/i.test(await ask(`${question} [y/N] `, io));
}

/**
 * Goes on only once the operator confirmed: `--yes`, or `y` to `question` on a TTY. Otherwise refuses
 * `confirmation-required` (exit 3) naming `what` would be lost; its `next` is the same command line
 * with `--yes` added, every other flag kept (rerunWith).
 */
export async function confirmOrRefuse(o: { yes: boolean | undefined; question: string; what: string; io?: PromptIo }): Promise<void> {
  if (o.yes === true) return;
  const io = o.io ?? TERMINAL;
  const tty = interactive(io);
  if (tty && (await askYesNo(o.question, io))) return;
  throw new CotalError("confirmation-required", `${o.what}; ${tty ? "not confirmed" : "no terminal to ask on"}, nothing was changed; confirm with --yes`, { next: rerunWith({ "--yes": true }) });
}
