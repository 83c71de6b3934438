import type { Command } from "commander";

/**
 * What `cotal --version` and the bare `cotal --help` print, rendered by the program itself when the bundle
 * is built (bundle.mjs writes it beside the entry), so the entry answers them without loading commander or
 * the command tree (issue 35; docs/development.md, "The CLI bundle").
 */
export interface QuickAnswers {
  version: string;
  /**
   * The top-level help at every output width: `help[i].text` holds from `help[i].from` columns up to the
   * next entry's `from` minus one, the last one at every width above it (commander wraps at the width of
   * a TTY's stdout, 80 when it is not a TTY).
   */
  help: { from: number; text: string }[];
}

/** Widths rendered at build time; above the last, the help no longer wraps (renderQuickAnswers checks). */
const WIDEST = 400;
const VERSION_FLAGS = new Set(["--version", "-V"]);
const HELP_FLAGS = new Set(["--help", "-h"]);

/** commander's default help width for stdout: the TTY's columns, otherwise (a pipe, a file) 80. */
export const stdoutHelpWidth = (out: { isTTY?: boolean; columns?: number }): number => (out.isTTY ? (out.columns ?? 80) : 80);

/**
 * The text `cotal <argv>` prints on stdout when `argv` is exactly one version or help flag, else
 * undefined (the full CLI runs). Any other argument (`--root x --help`, `space --help`) takes the full path.
 */
export function quickAnswer(argv: readonly string[], width: number, answers: QuickAnswers): string | undefined {
  if (argv.length !== 1) return undefined;
  const [flag] = argv as [string];
  if (VERSION_FLAGS.has(flag)) return `${answers.version}\n`;
  if (!HELP_FLAGS.has(flag) || !Number.isInteger(width)) return undefined;
  let text: string | undefined;
  for (const h of answers.help) if (h.from <= width) text = h.text;
  return text;
}

/** The program's own `--version` line and top-level help at each width from 0 to WIDEST, as commander writes them (it takes over `program`'s output settings: pass a fresh one). */
export function renderQuickAnswers(program: Command): QuickAnswers {
  let width = 80;
  // with colours on, commander hands back the text unstripped: any escape in it would show here
  program.configureOutput({ getOutHelpWidth: () => width, getOutHasColors: () => true });
  const render = (w: number): string => {
    width = w;
    return program.helpInformation();
  };
  const help: QuickAnswers["help"] = [];
  for (let w = 0; w <= WIDEST; w++) {
    const text = render(w);
    if (help.at(-1)?.text !== text) help.push({ from: w, text });
  }
  // the last entry must hold at every wider terminal, and colours must not matter (commander strips them when off)
  if (render(100_000) !== help.at(-1)?.text) throw new Error(`the top-level help still wraps at ${WIDEST} columns: raise WIDEST`);
  if (help.some((h) => h.text.includes("\u001b"))) throw new Error("the top-level help holds ANSI escapes: it would differ on a colour terminal");
  const version = program.version();
  if (!version) throw new Error("the program has no version");
  return { version, help };
}
