import { createHash } from "node:crypto";

// nats-server 2.11+ reports `config_digest` (VARZ, the reload line, `nats-server -t`): sha256 of Go's
// encoding/json of the parsed config map, keys sorted, HTML characters escaped, one trailing newline
// (nats-server conf/parse.go configDigest). Predicting it from the bytes cotal renders lets a writer
// check that a server on another host runs exactly those bytes without reading that host's log
// (docs/cluster.md "Proof by the server's digest"). Only the grammar cotal's renderer writes is read;
// anything else has no prediction (undefined), never a guessed one.

type ConfValue = string | number | boolean | ConfValue[] | ConfMap;
interface ConfMap {
  [key: string]: ConfValue;
}

const BARE_WORD = /^[A-Za-z][A-Za-z0-9_]*$/;
// The lexer reads these unquoted words as booleans (any case); cotal writes only `true`.
const BOOLEAN_WORDS = new Set(["true", "false", "yes", "no", "on", "off"]);

/** The digest nats-server would report for `text`, or undefined when `text` is not of the rendered grammar. */
export function natsConfigDigest(text: string | Uint8Array): string | undefined {
  const json = natsConfigJson(text);
  return json === undefined ? undefined : `sha256:${createHash("sha256").update(`${json}\n`).digest("hex")}`;
}

/** The JSON the digest hashes (without Go's trailing newline), or undefined when `text` is not of the rendered grammar. */
export function natsConfigJson(text: string | Uint8Array): string | undefined {
  const parsed = parseRendered(Buffer.from(text).toString("utf8"));
  return parsed === undefined ? undefined : goJson(parsed);
}

/** cotal's rendered subset: `key: value`, `key {` / `key: {` maps, `key: [` arrays of scalars, `#` comment lines. */
function parseRendered(text: string): ConfMap | undefined {
  const root: ConfMap = {};
  const stack: (ConfMap | ConfValue[])[] = [root];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const top = stack[stack.length - 1] as ConfMap | ConfValue[];
    if (line === "}" || line === "]") {
      if (stack.length === 1 || Array.isArray(top) !== (line === "]")) return undefined;
      stack.pop();
      continue;
    }
    if (Array.isArray(top)) {
      const v = scalar(line);
      if (v === undefined) return undefined;
      top.push(v);
      continue;
    }
    // Only `key: value`, `key: {`, `key: [` and `key {`, the forms the renderer writes (never `include`).
    const m = /^([A-Za-z0-9_$]+)(?:: (.+)| (\{))$/.exec(line);
    if (!m || Object.hasOwn(top, m[1] as string)) return undefined;
    const key = m[1] as string;
    const rest = m[2] ?? "{";
    if (rest === "{" || rest === "[") {
      const child: ConfMap | ConfValue[] = rest === "{" ? {} : [];
      top[key] = child;
      stack.push(child);
      continue;
    }
    const v = scalar(rest);
    if (v === undefined) return undefined;
    top[key] = v;
  }
  return stack.length === 1 ? root : undefined;
}

function scalar(s: string): string | number | boolean | undefined {
  const text = quoted(s);
  if (text !== undefined) return text;
  if (/^-?\d/.test(s)) {
    const n = Number(s);
    // Only plain integers: the lexer scales a size suffix (1K) and reads other forms as floats or dates.
    return Number.isSafeInteger(n) && String(n) === s ? n : undefined;
  }
  if (BOOLEAN_WORDS.has(s.toLowerCase())) return s === "true" ? true : s === "false" ? false : undefined;
  return BARE_WORD.test(s) ? s : undefined;
}

/** A double-quoted string with only the escapes cotal's confString writes (`\\`, `\"`). */
function quoted(s: string): string | undefined {
  const m = /^"((?:[^"\\]|\\["\\])*)"$/.exec(s);
  return m ? (m[1] as string).replace(/\\(["\\])/g, "$1") : undefined;
}

/** Go's encoding/json with its defaults: map keys sorted by bytes, <, >, &, U+2028 and U+2029 escaped. */
function goJson(v: ConfValue): string {
  if (Array.isArray(v)) return `[${v.map(goJson).join(",")}]`;
  if (typeof v === "object") {
    const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map((k) => `${goScalar(k)}:${goJson(v[k] as ConfValue)}`).join(",")}}`;
  }
  return goScalar(v);
}

function goScalar(s: string | number | boolean): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
