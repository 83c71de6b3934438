/**
 * The operator's reading of a command's output: the last `next:` line, `# comments` stripped. Only
 * a line of runnable `cotal …` commands counts (one, or several joined by `&&`, run in turn while
 * each succeeds); placeholders (`<name>`), prose and other shell do not.
 */
export interface NextStep {
  /** The printed text after `next:`, comment stripped. */
  printed: string;
  /** argv after `cotal` for each command of the line, or undefined when it is not runnable as a whole. */
  chain: string[][] | undefined;
}

export function lastNext(text: string): NextStep | undefined {
  const lines = text.split("\n").filter((l) => /(^|\s|;)next: /.test(l));
  const line = lines.at(-1);
  if (line === undefined) return undefined;
  const printed = (line.slice(line.lastIndexOf("next: ") + 6).split("#")[0] ?? "").trim();
  return { printed, chain: runnableChain(printed) };
}

function runnable(printed: string): string[] | undefined {
  if (!/^cotal\s/.test(printed) || /[<>,|&;'"$`]/.test(printed) || /\bthen\b|\bor\b/.test(printed)) return undefined;
  return printed.split(/\s+/).slice(1);
}

function runnableChain(printed: string): string[][] | undefined {
  const parts = printed.split("&&").map((p) => runnable(p.trim()));
  return parts.every((p) => p !== undefined) ? (parts as string[][]) : undefined;
}

/**
 * `cotal up` without --detach runs the broker in the foreground until signalled; a driver that
 * followed it literally would block for ever, so it gets --detach (the README's documented start).
 */
export function detachUp(argv: string[]): string[] {
  const verb = argv[0] === "--root" ? argv[2] : argv[0]; // a printed line names its root first
  return verb === "up" && !argv.includes("--detach") ? [...argv, "--detach"] : argv;
}
