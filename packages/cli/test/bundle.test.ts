import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The installed `cotal` is one rolldown bundle (bundle.mjs; docs/development.md, "The CLI bundle").
const BUNDLE = fileURLToPath(new URL("../dist/bundle/", import.meta.url));
const chunks = () => readdirSync(BUNDLE).filter((f) => f.endsWith(".js"));
const text = () => chunks().map((f) => readFileSync(join(BUNDLE, f), "utf8")).join("\n");

/** The chunks a chunk imports statically (`import … from "./x.js"`, `export … from`), not its `import("./x.js")`. */
function staticImports(code: string): string[] {
  return [...code.matchAll(/^(?:import|export)\b[^;'"]*?(?:\bfrom\s*)?["'](\.\/[^"']+)["']/gm)].map((m) => (m[1] as string).slice(2));
}

/** Every chunk Node loads before `cotal.js` runs a line: the entry and its static imports, transitively. */
function startChunks(): string[] {
  const seen = new Set<string>();
  const walk = (f: string): void => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const dep of staticImports(readFileSync(join(BUNDLE, f), "utf8"))) walk(dep);
  };
  walk("cotal.js");
  return [...seen];
}

/** The source modules a set of chunks holds: rolldown heads each one with a `// <path>` line. */
const modulesIn = (files: readonly string[]): string[] => files.flatMap((f) => [...readFileSync(join(BUNDLE, f), "utf8").matchAll(/^\/\/ (\S+\.[cm]?js)$/gm)].map((m) => m[1] as string));

/** What must load only when a verb runs (issue 35): nats.js, the core's verbs, the jobs and the dashboard. */
const VERB_ONLY = [/\/@nats-io\//, /\bcore\/dist\/ops\//, /\bcore\/dist\/(saga|verb|inventory|backup|provision)\//, /\bjobs\/dist\//, /\bdashboard\/dist\//];

describe("the CLI bundle", () => {
  it("holds exactly one CotalError class: jobs and the dashboard share the core's copy, so their errors keep their code and exit", () => {
    expect(text().match(/\bCotalError = class extends Error\b/g) ?? []).toHaveLength(1);
  });

  it("leaves the packages that read their own files or start threads to node_modules, and loads none of them at start", () => {
    const start = startChunks().map((f) => readFileSync(join(BUNDLE, f), "utf8")).join("\n");
    for (const pkg of ["bullmq", "ioredis", "express", "pino", "@bull-board/api"]) {
      expect(text(), pkg).toMatch(new RegExp(`from "${pkg.replace("/", "\\/")}"`));
      expect(start, `${pkg} in the entry's chunks`).not.toMatch(new RegExp(`from "${pkg.replace("/", "\\/")}"`));
    }
  });

  it("loads no nats.js, core verb, jobs or dashboard module before a verb runs: --help and --version parse commander and the help tables only (issue 35)", () => {
    const atStart = modulesIn(startChunks());
    const lazy = modulesIn(chunks().filter((f) => !startChunks().includes(f)));
    expect(atStart, "the walk reaches the program and commander").toEqual(expect.arrayContaining([expect.stringMatching(/\bdist\/program\.js$/), expect.stringMatching(/commander\/lib\/command\.js$/)]));
    for (const rule of VERB_ONLY) {
      expect(atStart.filter((m) => rule.test(m)), `${rule} loaded at start`).toEqual([]);
      expect(lazy.filter((m) => rule.test(m)).length, `${rule} in a chunk a verb imports`).toBeGreaterThan(0);
    }
  });

  it("only the entry awaits at top level and no chunk imports it: a verb importing a chunk that waits on the verb would never settle (exit 13)", () => {
    const topLevelAwait = /^(?![\s/*])(?!.*\bfunction\b)(?!.*=>).*\bawait\b/m; // rolldown indents all but the top level; no comment lines
    expect(chunks().filter((f) => topLevelAwait.test(readFileSync(join(BUNDLE, f), "utf8")))).toEqual(["cotal.js"]);
    expect(chunks().filter((f) => staticImports(readFileSync(join(BUNDLE, f), "utf8")).includes("cotal.js"))).toEqual([]);
  });

  it("starts as an executable script and answers --help", () => {
    const entry = join(BUNDLE, "cotal.js");
    expect(readFileSync(entry, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(entry).isFile()).toBe(true);
    expect(statSync(entry).mode & 0o111, "executable: the `cotal` on PATH links to it").toBe(0o111);
    expect(execFileSync(process.execPath, [entry, "--help"], { encoding: "utf8" })).toMatch(/^Usage: cotal /);
  });
});
