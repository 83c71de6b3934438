import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The package's public surface is what its entry files list by name; an `export *` would let any
// new export of an inner module leak out unreviewed (issue: 317 names through 47 `export *` lines).
const pkgDir = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", pkgDir), "utf8")) as { exports: Record<string, { types: string; default: string }> };

/** The source entry file behind a package.json export (dist/x.js is built from src/x.ts). */
function sourceOf(target: string): URL {
  return new URL(target.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"), pkgDir);
}

const entries = Object.entries(pkg.exports).map(([subpath, t]) => [subpath, sourceOf(t.default)] as const);

describe("the public surface of @cotal/saga", () => {
  it("has the curated entries: the verbs at the root, the lower layers on subpaths", () => {
    expect(entries.map(([s]) => s).sort()).toEqual(["./errors", "./testing", "./trust", "./broker", "./inventory", "./maintenance", "./provision", "./root", "./server-process", "./saga", "."].sort());
    for (const [subpath, t] of Object.entries(pkg.exports)) expect(t.types, subpath).toBe(t.default.replace(/\.js$/, ".d.ts"));
  });

  it.each(entries)("%s lists every name it exports (no export *)", (_subpath, file) => {
    const text = readFileSync(file, "utf8").replace(/\/\/.*$/gm, "").replace(/\/\*[\s\S]*?\*\//g, "");
    expect(text).not.toMatch(/export\s+\*/);
    expect(text).not.toMatch(/export\s+(type\s+)?\{[^}]*\}\s+from\s+"[^"]*\/index\.js"/); // nor a barrel that has one
    expect(text).toMatch(/export\s+(type\s+)?\{/);
  });

  it("keeps the whole module graph off the package's exports (internal.ts is for these tests)", () => {
    expect(entries.some(([, f]) => f.pathname.endsWith("/src/internal.ts"))).toBe(false);
  });
});
