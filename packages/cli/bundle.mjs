// The installed `cotal` (package.json "bin"): one rolldown bundle of the CLI and every workspace package it
// loads (saga, jobs, dashboard: one copy of each, so errors keep their class), from tsc's dist/. Node then
// loads a handful of files instead of ~250 modules at every start (docs/development.md, "The CLI bundle").
// Packages that read their own files at run time or start worker threads (BullMQ, pino's transports, Bull
// Board's UI, express) stay external: they load only in the verbs that need them, resolved from this
// package's own dependencies. `--help` and `--version` load no verb: the commands import the core in their
// actions (test/bundle.test.ts checks the bundle's import graph).
//
// Two outputs in one folder, all CommonJS (issue 35): `cotal.js`, bin.ts alone (the folder's package.json
// says .js is CommonJS), which answers `--version` and the bare `--help` from quick-answers.json without
// loading the CLI, and otherwise requires `run.cjs`, the CLI proper, whose chunks it compiles with V8's
// cached code of earlier runs (src/code-cache.ts: Node 20 keeps no compiled code for ES modules).
import { chmod, rename, rm, writeFile } from "node:fs/promises";
import { rolldown } from "rolldown";
import { buildProgram } from "./dist/program.js";
import { renderQuickAnswers } from "./dist/quick-answer.js";

export const EXTERNAL = /^(bullmq|ioredis|express|pino|pino-pretty|prom-client|@bull-board\/[^/]+)(\/|$)/;
const dist = (f) => new URL(`./dist/${f}`, import.meta.url).pathname;
const out = new URL("./dist/bundle", import.meta.url).pathname;
// Written beside, then swapped in: a failed build leaves the last good bundle in place, never none.
const next = `${out}.next-${process.pid}`;
const comments = { legal: true, annotation: false, jsdoc: false }; // less to scan at each start; the source maps keep them

/** The CLI proper: run.cjs and the chunks it and the verbs' actions load. */
async function writeRun() {
  const bundle = await rolldown({ input: { run: dist("run.js") }, platform: "node", external: (id) => id.startsWith("node:") || EXTERNAL.test(id), logLevel: "warn" });
  await bundle.write({
    dir: next,
    format: "cjs",
    // `import("node:fs/promises")` becomes a require: a script V8 compiles from cached data has no dynamic-import callback
    dynamicImportInCjs: false,
    entryFileNames: "[name].cjs",
    chunkFileNames: "chunk-[name]-[hash].cjs",
    sourcemap: true,
    // Two chunks carry nearly everything: `start`, what run.cjs requires at once (commander, the
    // commands' registration, the help tables, @cotal/core/light and ./errors), and `core`, the rest of
    // @cotal/core with nats.js, which an action imports when its verb runs. Left to itself rolldown cuts
    // the core into ~20 shared chunks, and each file Node resolves and links cost a verb more than it saved.
    codeSplitting: {
      groups: [
        { name: "start", tags: ["$initial"], priority: 2 },
        { name: "core", test: /[\\/]core[\\/]dist[\\/]/, priority: 1 },
      ],
    },
    comments,
  });
  await bundle.close();
}

/** cotal.js: bin.ts, its quick answers and the code cache; it requires run.cjs by a path rolldown does not follow. */
async function writeEntry() {
  const bundle = await rolldown({ input: { cotal: dist("bin.js") }, platform: "node", external: (id) => id.startsWith("node:"), logLevel: "warn" });
  await bundle.write({ dir: next, format: "cjs", entryFileNames: "[name].js", sourcemap: true, comments, codeSplitting: false });
  await bundle.close();
  await writeFile(`${next}/package.json`, `${JSON.stringify({ type: "commonjs" })}\n`);
  // `cotal --version` and `cotal --help`, as the program prints them, for the entry to answer alone (src/quick-answer.ts)
  await writeFile(`${next}/quick-answers.json`, `${JSON.stringify(renderQuickAnswers(buildProgram()))}\n`);
  // the bin is run directly (the `cotal` link on PATH, infra/install-cli.sh): executable, as npm would make it
  await chmod(`${next}/cotal.js`, 0o755);
}

await rm(next, { recursive: true, force: true });
await writeRun();
await writeEntry();
await rm(out, { recursive: true, force: true });
await rename(next, out);
