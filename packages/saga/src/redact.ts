/** Last line of defence: no nkeys seed (S + role + base32) ever reaches a terminal, a log or a page. */
const SEED = /\bS[OAUNC][A-Z2-7]{50,}\b/g;

export function redactSeeds(text: string): string {
  return text.replace(SEED, "[seed redacted]");
}
