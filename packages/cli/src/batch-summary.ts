/** Up to this many names are listed as they are; a longer batch is summarised as a count and ranges. */
export const FEW_NAMES = 5;

interface Parsed {
  name: string;
  prefix: string;
  digits: string;
  n: number;
}

function parse(name: string): Parsed {
  const m = /^(.*?)(\d+)$/.exec(name);
  return m && m[2] !== undefined && m[2].length <= 15 ? { name, prefix: m[1] ?? "", digits: m[2], n: Number(m[2]) } : { name, prefix: name, digits: "", n: -1 };
}

/**
 * Names as runs: `t0001..t1000, beta, gamma`. A run is one prefix with consecutive numbers of one
 * width (so t0009, t0010 join; t9, t10 do not). Past `maxParts` runs the rest is counted, not listed.
 */
export function compressNames(names: readonly string[], maxParts = 8): string {
  const sorted = [...new Set(names)].map(parse).sort((a, b) => (a.prefix === b.prefix ? a.digits.length - b.digits.length || a.n - b.n : a.prefix < b.prefix ? -1 : 1));
  const runs: Parsed[][] = [];
  for (const p of sorted) {
    const run = runs.at(-1);
    const last = run?.at(-1);
    if (run && last && p.digits !== "" && last.digits !== "" && p.prefix === last.prefix && p.digits.length === last.digits.length && p.n === last.n + 1) run.push(p);
    else runs.push([p]);
  }
  const parts = runs.flatMap((r) => {
    const first = r[0];
    const last = r.at(-1);
    if (!first || !last) return [];
    if (r.length >= 3) return [`${first.name}..${last.name}`];
    return r.map((p) => p.name);
  });
  if (parts.length <= maxParts) return parts.join(", ");
  const shown = parts.slice(0, maxParts);
  const hidden = parts.length - maxParts;
  return `${shown.join(", ")}, … and ${hidden} more run${hidden === 1 ? "" : "s"} (--json lists every name)`;
}

/** "alpha, beta" for a few names; "1000 spaces: t0001..t1000" for a batch. */
export function summariseNames(names: readonly string[], noun = "space"): string {
  if (names.length <= FEW_NAMES) return names.join(", ");
  return `${names.length} ${noun}${names.length === 1 ? "" : "s"}: ${compressNames(names)}`;
}
