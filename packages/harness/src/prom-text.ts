/**
 * A strict reader of the Prometheus text exposition (version 0.0.4) for tests: every line is a
 * HELP, a TYPE or a sample of a declared family, or parsing throws. prom-client ships no parser.
 */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
const SUFFIXES: Record<PromFamily["type"], string[]> = { counter: [""], gauge: [""], untyped: [""], histogram: ["_bucket", "_sum", "_count"], summary: ["", "_sum", "_count"] };

/** Values as Prometheus reads them (Go's ParseFloat: Inf/NaN case-insensitive; prom-client writes "Nan"). */
function parseValue(text: string, line: number): number {
  if (/^\+?inf(inity)?$/i.test(text)) return Infinity;
  if (/^-inf(inity)?$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`line ${line}: bad value ${JSON.stringify(text)}`);
  return Number(text);
}

function parseLabels(body: string, line: number): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < body.length) {
    const eq = body.indexOf("=", i);
    if (eq < 0) throw new Error(`line ${line}: label without '='`);
    const key = body.slice(i, eq);
    if (!LABEL_NAME.test(key)) throw new Error(`line ${line}: bad label name ${JSON.stringify(key)}`);
    if (key in labels) throw new Error(`line ${line}: label ${key} repeated`);
    if (body[eq + 1] !== '"') throw new Error(`line ${line}: label ${key} value not quoted`);
    let j = eq + 2;
    let value = "";
    for (; j < body.length && body[j] !== '"'; j++) {
      if (body[j] === "\\") {
        const next = body[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`line ${line}: bad escape \\${next ?? ""}`);
      } else value += body[j];
    }
    if (body[j] !== '"') throw new Error(`line ${line}: unterminated label value`);
    labels[key] = value;
    i = j + 1;
    if (body[i] === ",") i++;
    else if (i < body.length) throw new Error(`line ${line}: expected ',' after label ${key}`);
  }
  return labels;
}

export function parsePromText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  lines.forEach((raw, idx) => {
    const n = idx + 1;
    if (raw.startsWith("# HELP ") || raw.startsWith("# TYPE ")) {
      const [, kind, name, ...rest] = raw.split(" ");
      if (!name || !NAME.test(name)) throw new Error(`line ${n}: bad metric name in ${JSON.stringify(raw)}`);
      const fam = families.get(name) ?? { name, type: "untyped", help: "", samples: [] };
      if (kind === "TYPE") {
        const type = rest.join(" ");
        if (!TYPES.has(type)) throw new Error(`line ${n}: unknown type ${JSON.stringify(type)}`);
        if (fam.samples.length > 0) throw new Error(`line ${n}: TYPE of ${name} after its samples`);
        fam.type = type as PromFamily["type"];
      } else fam.help = rest.join(" ");
      families.set(name, fam);
      return;
    }
    if (raw === "") return; // the format allows empty lines between families
    if (raw.startsWith("#") || raw.trim() === "") throw new Error(`line ${n}: unexpected ${JSON.stringify(raw)}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(raw);
    if (!m || !m[1] || !m[3]) throw new Error(`line ${n}: not a sample: ${JSON.stringify(raw)}`);
    const name = m[1];
    const fam = [...families.values()].find((f) => SUFFIXES[f.type].some((s) => f.name + s === name));
    if (!fam) throw new Error(`line ${n}: sample ${name} of no declared family`);
    fam.samples.push({ name, labels: parseLabels(m[2] ?? "", n), value: parseValue(m[3], n) });
  });
  return families;
}

/** The value of the sample with exactly these labels, or undefined when there is none. */
export function promValue(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const f of families.values()) {
    const s = f.samples.find((x) => x.name === name && Object.keys(x.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
    if (s) return s.value;
  }
  return undefined;
}
