import { usageError } from "@cotal/core/errors";

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
const MAX_DURATION_SECONDS = 10 * 366 * 86400;

/** "90", "90s", "30m", "24h", "7d", "2w" → seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)([smhdw]?)$/.exec(text.trim());
  if (!m || !m[1]) throw usageError(`invalid duration ${JSON.stringify(text)}: use e.g. 90s, 30m, 24h, 7d`);
  const n = Number(m[1]) * (UNITS[m[2] || "s"] ?? 1);
  if (n <= 0) throw usageError(`duration must be positive: ${JSON.stringify(text)}`);
  // A JWT expiry past this is a typo, not a policy, and would overflow the claim's date arithmetic.
  if (n > MAX_DURATION_SECONDS) throw usageError(`duration ${JSON.stringify(text)} is longer than 10 years`);
  return n;
}

export function parsePort(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw usageError(`invalid port ${JSON.stringify(text)}: expected 1-65535`, "cotal up --port 4222");
  return n;
}
