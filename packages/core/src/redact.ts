/** An nkeys seed as text: S, a role letter, base32. No seed may reach a terminal, a log line or a page. */
const SEED = /(?<![A-Z2-7])S[OAUNC][A-Z2-7]{50,}/g;

/** Masks every seed-shaped token: the one rule the CLI's output, the worker's logs and the dashboard apply. */
export function redactSeeds(text: string): string {
  return text.replace(SEED, "[seed redacted]");
}
