export interface Summary {
  n: number;
  median: number;
  p90: number;
  min: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an unsorted sample. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank] as number;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function summarize(xs: readonly number[]): Summary {
  return {
    n: xs.length,
    median: round(median(xs)),
    p90: round(percentile(xs, 90)),
    min: round(Math.min(...xs)),
    max: round(Math.max(...xs)),
    mean: round(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)),
  };
}

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export const ms = (x: number): string => (Number.isFinite(x) ? `${x >= 100 ? x.toFixed(0) : x.toFixed(1)} ms` : "n/a");

/** A plain fixed-width table for the console. */
export function table(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [head, ...rows].map((r) => r.map(String));
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [line(cells[0] ?? []), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}
