import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../src/program.js";
import { quickAnswer, type QuickAnswers } from "../src/quick-answer.js";

// The installed `cotal` is one rolldown bundle (bundle.mjs; docs/development.md, "The CLI bundle").
const BUNDLE = fileURLToPath(new URL("../dist/bundle/", import.meta.url));
const chunks = () => readdirSync(BUNDLE).filter((f) => /\.c?js$/.test(f));
const text = () => chunks().map((f) => readFileSync(join(BUNDLE, f), "utf8")).join("\n");

/** The chunks a chunk requires as it loads (`const x = require("./x.cjs")` at top level), not those a function requires later (`Promise.resolve().then(() => require(…))`). */
function staticImports(code: string): string[] {
  return [...code.matchAll(/^(?:const|let|var)\s+\w+\s*=\s*require\("(\.\/[^"]+)"\)/gm)].map((m) => (m[1] as string).slice(2));
}

/** Every chunk Node loads for a command the entry does not answer alone: run.cjs and what it requires as it loads, transitively. */
function startChunks(): string[] {
  const seen = new Set<string>();
  const walk = (f: string): void => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const dep of staticImports(readFileSync(join(BUNDLE, f), "utf8"))) walk(dep);
  };
  walk("run.cjs");
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
      const required = new RegExp(`require\\("${pkg.replace("/", "\\/")}"\\)`);
      expect(text(), pkg).toMatch(required);
      expect(start, `${pkg} in the entry's chunks`).not.toMatch(required);
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

  it("no chunk requires the entry: the entry runs the verb, so a chunk the verb loads must never load it back", () => {
    expect(chunks().filter((f) => /require\("\.\/cotal\.js"\)/.test(readFileSync(join(BUNDLE, f), "utf8")))).toEqual([]);
  });

  it("the entry is bin.ts, its quick answers and the code cache, CommonJS, requiring only Node's built-ins and, when it does not answer alone, run.cjs: --version and --help load no commander or command tree (issue 35)", () => {
    const entry = readFileSync(join(BUNDLE, "cotal.js"), "utf8");
    expect(JSON.parse(readFileSync(join(BUNDLE, "package.json"), "utf8")), "the folder makes cotal.js CommonJS").toEqual({ type: "commonjs" });
    expect([...entry.matchAll(/\brequire\("([^"]+)"\)/g)].map((m) => m[1]).filter((id) => !id?.startsWith("node:") && id !== "url")).toEqual([]);
    expect([...entry.matchAll(/"(\.\/[^"]+)"/g)].map((m) => m[1]).sort()).toEqual(["./quick-answers.json", "./run.cjs"]);
    expect(modulesIn(["cotal.js"]).sort()).toEqual(["dist/bin.js", "dist/code-cache.js", "dist/quick-answer.js"]);
  });

  it("answers --version, -V, --help and -h with the program's own text, through a pipe and on terminals of any width", () => {
    const entry = join(BUNDLE, "cotal.js");
    const program = buildProgram();
    for (const flag of ["--version", "-V"]) expect(execFileSync(process.execPath, [entry, flag], { encoding: "utf8" })).toBe(`${program.version()}\n`);
    program.configureOutput({ getOutHelpWidth: () => 80 }); // not a TTY: commander's 80 columns
    for (const flag of ["--help", "-h"]) expect(execFileSync(process.execPath, [entry, flag], { encoding: "utf8" })).toBe(program.helpInformation());
    const answers = JSON.parse(readFileSync(join(BUNDLE, "quick-answers.json"), "utf8")) as QuickAnswers;
    for (const width of [0, 20, 40, 64, 79, 80, 81, 100, 120, 145, 146, 200, 399, 400, 401, 1000]) {
      program.configureOutput({ getOutHelpWidth: () => width });
      expect(quickAnswer(["--help"], width, answers), `${width} columns`).toBe(program.helpInformation());
    }
  });

  it("starts as an executable script and answers --help", () => {
    const entry = join(BUNDLE, "cotal.js");
    expect(readFileSync(entry, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(entry).isFile()).toBe(true);
    expect(statSync(entry).mode & 0o111, "executable: the `cotal` on PATH links to it").toBe(0o111);
    expect(execFileSync(process.execPath, [entry, "--help"], { encoding: "utf8" })).toMatch(/^Usage: cotal /);
  });
});
