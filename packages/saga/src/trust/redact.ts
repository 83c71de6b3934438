/** An nkeys seed as text: S, a role letter, base32. No seed may reach a terminal or a log line. */
const SEED = /(?<![A-Z2-7])S[OAUNC][A-Z2-7]{50,}/g;

/** Masks every seed-shaped token; the one rule both the CLI's output and the worker's logs apply. */
export function redactSeeds(text: string): string {
  return text.replace(SEED, "[seed redacted]");
}
