import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The package's public surface is what its entry files list by name (issue #30: the entry lists what
// other packages use, nothing else). An `export *` would let any new export of an inner module leak
// out unreviewed; a name nobody outside the core imports is dead surface (the core's own tests import
// from ../src/... or src/internal.ts).
const pkgDir = new URL("../", import.meta.url);
const repo = fileURLToPath(new URL("../../../", import.meta.url));
const pkg = JSON.parse(readFileSync(new URL("package.json", pkgDir), "utf8")) as { exports: Record<string, { types: string; default: string }> };

/** The source entry file behind a package.json export (dist/x.js is built from src/x.ts). */
function sourceOf(target: string): URL {
  return new URL(target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"), pkgDir);
}

const entries = Object.entries(pkg.exports).map(([subpath, t]) => [subpath, sourceOf(t.default)] as const);
const withoutComments = (text: string) => text.replace(/\/\/.*$/gm, "").replace(/\/\*[\s\S]*?\*\//g, "");

/** The names an entry file exports: `export { a, type B } from "..."` lines (the only form it may use). */
function exportedNames(file: URL): string[] {
  const out: string[] = [];
  for (const m of withoutComments(readFileSync(file, "utf8")).matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from\s*"[^"]+"/g)) {
    for (const item of (m[1] as string).split(",")) {
      const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop();
      if (name) out.push(name);
    }
  }
  return out;
}

/** Every source, test and script file outside this package that may import the core. */
function consumerFiles(): string[] {
  const roots = ["packages", "apps", "test-live", "scripts"].map((d) => join(repo, d));
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir)) {
      if (e === "node_modules" || e === "dist" || e.startsWith(".")) continue;
      const p = join(dir, e);
      if (p === join(repo, "packages", "core")) continue;
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|mts|mjs|js|sh)$/.test(e)) out.push(p);
    }
  };
  for (const r of roots) walk(r);
  return out;
}

/** subpath → the names other packages import from it (static imports, re-exports, `await import`). */
function importedNames(): Map<string, Set<string>> {
  const used = new Map<string, Set<string>>();
  const add = (subpath: string, list: string) => {
    for (const item of list.split(",")) {
      const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+|:/)[0]?.trim();
      if (name) (used.get(subpath) ?? used.set(subpath, new Set()).get(subpath))?.add(name);
    }
  };
  for (const f of consumerFiles()) {
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(/(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*"@cotal\/core(\/[\w-]+)?"/g)) add(`.${m[2] ?? ""}`, m[1] as string);
    for (const m of text.matchAll(/const\s*\{([^}]*)\}\s*=\s*await\s+import\(\s*"@cotal\/core(\/[\w-]+)?"\s*\)/g)) add(`.${m[2] ?? ""}`, m[1] as string);
    // `const [{ a }, { b }] = await Promise.all([import("@cotal/core"), import("@cotal/core/broker")])`: names and entries paired in order
    for (const m of text.matchAll(/const\s*\[([^\]]*)\]\s*=\s*await\s+Promise\.all\(\s*\[([^\]]*)\]\s*\)/g)) {
      const lists = [...(m[1] as string).matchAll(/\{([^}]*)\}/g)].map((x) => x[1] as string);
      const subpaths = [...(m[2] as string).matchAll(/import\(\s*"@cotal\/core(\/[\w-]+)?"\s*\)/g)].map((x) => `.${x[1] ?? ""}`);
      lists.forEach((list, i) => subpaths[i] !== undefined && add(subpaths[i], list));
    }
    // scripts/servers.sh loads a built entry by path
    for (const m of text.matchAll(/const\s*\{([^}]*)\}\s*=\s*await\s+import\(\s*"[./]*packages\/core\/dist\/entries\/([\w-]+)\.js"\s*\)/g)) add(`./${m[2]}`, m[1] as string);
  }
  return used;
}

describe("the public surface of @cotal/core", () => {
  it("has the curated entries: the verbs at the root, the lower layers on subpaths", () => {
    expect(entries.map(([s]) => s).sort()).toEqual([".", "./backup", "./broker", "./errors", "./inventory", "./light", "./provision", "./root", "./server-process", "./testing", "./trust"]);
    for (const [subpath, t] of Object.entries(pkg.exports)) expect(t.types, subpath).toBe(t.default.replace(/\.js$/, ".d.ts"));
  });

  it.each(entries)("%s lists every name it exports (no export *)", (_subpath, file) => {
    const text = withoutComments(readFileSync(file, "utf8"));
    expect(text).not.toMatch(/export\s+\*/);
    expect(text).not.toMatch(/export\s+(type\s+)?\{[^}]*\}\s+from\s+"[^"]*\/index\.js"/); // nor a barrel that has one
    expect(text).not.toMatch(/export\s+(?!(type\s+)?\{[^}]*\}\s*from\s)/); // no declarations: an entry only re-exports
    expect(exportedNames(file).length).toBeGreaterThan(0);
  });

  it.each(entries)("%s starts with its reason in one line", (subpath, file) => {
    const [first, second] = readFileSync(file, "utf8").split("\n");
    expect(first).toMatch(new RegExp(`^// @cotal/core${subpath.slice(1).replace(/[/-]/g, "\\$&")}: \\S.{20,}$`));
    expect(second, "the reason is one line").not.toMatch(/^\s*(\/\/|\*)/);
  });

  it("exports only names other packages import (./testing: the in-memory seams, kept for tests written against the saga)", () => {
    const used = importedNames();
    const unused = entries
      .filter(([subpath]) => subpath !== "./testing")
      .flatMap(([subpath, file]) => exportedNames(file).filter((n) => !used.get(subpath)?.has(n)).map((n) => `${subpath} ${n}`));
    expect(unused).toEqual([]);
  });

  it("imports from the entries only names they export", () => {
    const exported = new Map(entries.map(([subpath, file]) => [subpath, new Set(exportedNames(file))]));
    const missing = [...importedNames()].flatMap(([subpath, names]) => [...names].filter((n) => !exported.get(subpath)?.has(n)).map((n) => `${subpath} ${n}`));
    expect(missing).toEqual([]);
  });

  it("gives each name one entry; only the root repeats the error contract of ./errors for the verbs' callers", () => {
    const owners = new Map<string, string[]>();
    for (const [subpath, file] of entries) for (const n of exportedNames(file)) owners.set(n, [...(owners.get(n) ?? []), subpath]);
    const errors = new Set(exportedNames(sourceOf(pkg.exports["./errors"]?.default as string)));
    const repeated = [...owners].filter(([, subs]) => subs.length > 1);
    expect(repeated.filter(([n, subs]) => !(errors.has(n) && subs.length === 2 && subs.includes(".") && subs.includes("./errors")))).toEqual([]);
  });

  it("keeps the whole module graph off the package's exports (internal.ts is for these tests)", () => {
    expect(entries.some(([, f]) => f.pathname.endsWith("/src/internal.ts"))).toBe(false);
  });
});
