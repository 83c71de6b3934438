import dockerignore from "@balena/dockerignore";
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import { NKEY_SEED } from "./nkey-seed.js";

/**
 * What `docker build` would send and what the Dockerfile's COPY takes, computed without an engine:
 * the context directory walked as Docker walks it (symlinks not followed), filtered by its
 * .dockerignore through @balena/dockerignore (Docker's own matching rules: patterns anchored at the
 * context root, `**`, `!` exceptions, the last match winning, a parent's match covering its files).
 */
export function buildContext(contextDir: string): string[] {
  const ignoreFile = join(contextDir, ".dockerignore");
  const patterns = existsSync(ignoreFile) ? readFileSync(ignoreFile, "utf8").split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")) : [];
  const ig = ignoreFactory().add(patterns);
  // Literal heads of the `!` exceptions: a directory none of them can reach below is skipped whole
  // (node_modules, .git), as Docker skips it; one they may reach is walked and its files filtered.
  const heads = patterns.filter((p) => p.startsWith("!")).map((p) => p.slice(1).replace(/^\/+/, "").split(/[*?[\\]/)[0] as string);
  const reachable = (dir: string): boolean => heads.some((h) => h.startsWith(`${dir}/`) || `${dir}/`.startsWith(h));
  const files: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(contextDir, rel)).sort()) {
      const path = rel === "" ? name : `${rel}/${name}`;
      if (lstatSync(join(contextDir, path)).isDirectory()) {
        if (!ig.ignores(path) || reachable(path)) walk(path);
      } else if (!ig.ignores(path)) files.push(path);
    }
  };
  walk("");
  return files;
}

/** The package is CommonJS typed with an ES default: under Node's ESM the default import is the factory itself. */
function ignoreFactory(): ReturnType<typeof dockerignore.default> {
  const mod = dockerignore as unknown as typeof dockerignore.default | { default: typeof dockerignore.default };
  return typeof mod === "function" ? mod() : mod.default();
}

/** One COPY/ADD of a Dockerfile: its sources (context-relative), destination, and `--from` stage if any. */
export interface CopyInstruction {
  line: number;
  sources: string[];
  dest: string;
  from?: string;
}

/** The COPY and ADD instructions of a Dockerfile (continuations joined, flags read, JSON form too). */
export function copyInstructions(dockerfile: string): CopyInstruction[] {
  const out: CopyInstruction[] = [];
  const lines = dockerfile.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i] as string;
    while (text.trimEnd().endsWith("\\") && i + 1 < lines.length) text = `${text.trimEnd().slice(0, -1)} ${lines[++i]}`;
    const m = /^\s*(COPY|ADD)\s+(.*)$/i.exec(text);
    if (!m) continue;
    let rest = (m[2] as string).trim();
    let from: string | undefined;
    for (let flag = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest); flag; flag = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest)) {
      if (flag[1] === "from") from = flag[2];
      rest = rest.slice(flag[0].length);
    }
    const words = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
    out.push({ line: start + 1, sources: words.slice(0, -1), dest: words.at(-1) as string, ...(from !== undefined ? { from } : {}) });
  }
  return out;
}

/**
 * The context files one COPY takes: `.` is the whole context, a path its file or everything under it.
 * Wildcards are refused rather than guessed (cotal's Dockerfile uses none).
 */
export function copiedFiles(copy: CopyInstruction, context: readonly string[]): string[] {
  if (copy.from !== undefined) return []; // from another stage, not the context
  const taken = new Set<string>();
  for (const raw of copy.sources) {
    if (/[*?[]/.test(raw)) throw new Error(`COPY source ${raw} (Dockerfile line ${copy.line}) uses a wildcard this reader does not expand`);
    const src = raw.replace(/^\.\/?/, "").replace(/\/+$/, "");
    for (const f of context) if (src === "" || f === src || f.startsWith(`${src}/`)) taken.add(f);
  }
  return [...taken].sort();
}

export { NKEY_SEED };

/** Names that are a root, a secret, or a host's dependencies and outputs, wherever they sit. */
const FORBIDDEN_SEGMENTS = new Set([".cotal", "auth", "broker.secrets", "seeds", "node_modules", "dist", ".git", ".tools", ".test-results", ".turbo"]);
const FORBIDDEN_SUFFIXES = [".creds", ".seed", ".nk", ".secrets"];

export interface SecretFinding {
  path: string;
  why: string;
}

/** Every file among `files` (relative to `dir`) that is forbidden by name or holds an nkeys seed. */
export function secretFindings(dir: string, files: readonly string[]): SecretFinding[] {
  const found: SecretFinding[] = [];
  for (const path of files) {
    const segments = path.split("/");
    const seg = segments.find((s) => FORBIDDEN_SEGMENTS.has(s));
    const suffix = FORBIDDEN_SUFFIXES.find((s) => (segments.at(-1) as string).endsWith(s));
    if (seg !== undefined) found.push({ path, why: `under ${seg}/` });
    else if (suffix !== undefined) found.push({ path, why: `a ${suffix} file` });
    else if (NKEY_SEED.test(head(join(dir, path)))) found.push({ path, why: "holds an nkeys seed" });
  }
  return found;
}

/** A file's first 4 MiB as latin1 (a seed is ASCII; a bigger file is no source a build needs). */
function head(path: string): string {
  if (lstatSync(path).isSymbolicLink()) return ""; // Docker sends the link itself, not what it points at
  const buf = Buffer.alloc(Math.min(lstatSync(path).size, 4 * 1024 * 1024));
  const fd = openSync(path, "r");
  try {
    readSync(fd, buf, 0, buf.length, 0);
  } finally {
    closeSync(fd);
  }
  return buf.toString("latin1");
}
