import { ERROR_TABLE, EXIT, type ErrorCode } from "@cotal/core/errors";

/** One short line per exit number, free of colons (the long form is README "Exit codes"). */
export const EXIT_MEANING: { readonly [K in keyof typeof EXIT]: string } = {
  ok: "success, an idempotent no-op included",
  internal: "unexpected internal error",
  usage: "bad input; nothing was changed",
  refused: "a decision or a repair is owed first",
  busy: "another writer, or no answer in time; retry",
  notFound: "not found / already exists",
  broker: "broker process or environment problem",
  unproven: "a reload could not be proven",
  io: "file-system error (the path is named)",
  jobs: "queued work did not finish",
};

/** Every verb can end with these; the help tables list only the rest. */
const IMPLIED: readonly ErrorCode[] = ["usage", "internal"];

/** `Exit codes:` lines, by number: `  3 refused    …: quota-overcommit, fd-budget`. */
export function exitLines(errors: readonly ErrorCode[]): string[] {
  const byExit = new Map<number, ErrorCode[]>();
  for (const code of [...IMPLIED, ...errors]) {
    const n = ERROR_TABLE[code].exit;
    const codes = byExit.get(n) ?? [];
    if (!codes.includes(code)) codes.push(code);
    byExit.set(n, codes);
  }
  const names = Object.keys(EXIT) as (keyof typeof EXIT)[];
  const width = Math.max(...names.map((k) => k.length));
  return names
    .filter((k) => EXIT[k] === EXIT.ok || byExit.has(EXIT[k]))
    .map((k) => {
      const codes = byExit.get(EXIT[k]);
      return `  ${EXIT[k]} ${k.padEnd(width)}  ${EXIT_MEANING[k]}${codes ? `: ${codes.join(", ")}` : ""}`;
    });
}
