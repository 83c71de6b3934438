/** `--name value` / `--name=value` / `--flag` parsing for the bench scripts (no dependency). */
export interface Args {
  int(name: string, fallback: number): number;
  list(name: string, fallback: number[]): number[];
  str(name: string, fallback: string): string;
  flag(name: string): boolean;
}

export function parseArgs(argv: readonly string[] = process.argv.slice(2)): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (!a.startsWith("--")) continue;
    const eq = a.indexOf("=");
    if (eq > 0) {
      values.set(a.slice(2, eq), a.slice(eq + 1));
      continue;
    }
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith("--")) {
      values.set(a.slice(2), next);
      i++;
    } else values.set(a.slice(2), "true");
  }
  const positiveInt = (name: string, raw: string): number => {
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(raw)}`);
    return n;
  };
  return {
    int: (name, fallback) => {
      const raw = values.get(name);
      return raw === undefined ? fallback : positiveInt(name, raw);
    },
    list: (name, fallback) => {
      const raw = values.get(name);
      return raw === undefined ? fallback : raw.split(",").filter(Boolean).map((x) => positiveInt(name, x));
    },
    str: (name, fallback) => values.get(name) ?? fallback,
    flag: (name) => values.get(name) === "true",
  };
}
