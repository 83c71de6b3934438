// The installed `cotal` (package.json "bin"): one rolldown bundle of the CLI and every workspace package it
// loads (saga, jobs, dashboard: one copy of each, so errors keep their class), from tsc's dist/. Node then
// loads a handful of files instead of ~250 modules at every start (docs/development.md, "The CLI bundle").
// Packages that read their own files at run time or start worker threads (BullMQ, pino's transports, Bull
// Board's UI, express) stay external: they load only in the verbs that need them, resolved from this
// package's own dependencies. `--help` and `--version` load no verb: the commands import the core in their
// actions (test/bundle.test.ts checks the entry's static imports).
import { chmod, rename, rm } from "node:fs/promises";
import { rolldown } from "rolldown";

export const EXTERNAL = /^(bullmq|ioredis|express|pino|pino-pretty|prom-client|@bull-board\/[^/]+)(\/|$)/;
const out = new URL("./dist/bundle", import.meta.url).pathname;
// Written beside, then swapped in: a failed build leaves the last good bundle in place, never none.
const next = `${out}.next-${process.pid}`;

await rm(next, { recursive: true, force: true });
const bundle = await rolldown({
  input: { cotal: new URL("./dist/bin.js", import.meta.url).pathname },
  platform: "node",
  external: (id) => id.startsWith("node:") || EXTERNAL.test(id),
  logLevel: "warn",
});
await bundle.write({
  dir: next,
  format: "esm",
  entryFileNames: "[name].js",
  chunkFileNames: "chunk-[name]-[hash].js",
  sourcemap: true,
  // Two chunks carry nearly everything (issue 35): `start`, what the entry imports statically (commander,
  // the commands' registration, the help tables, @cotal/core/light and ./errors), and `core`, the rest of
  // @cotal/core with nats.js, which an action imports when its verb runs. Left to itself rolldown cuts the
  // core into ~20 shared chunks, and each file Node resolves and links cost a verb more than it saved.
  // bin.js stays alone in cotal.js: its top-level await runs the verb, so a chunk the verb imports must
  // never import it back (Node would wait for ever and exit 13).
  codeSplitting: {
    groups: [
      { name: "start", tags: ["$initial"], test: (id) => !/[\\/]cli[\\/]dist[\\/]bin\.js$/.test(id), priority: 2 },
      { name: "core", test: /[\\/]core[\\/]dist[\\/]/, priority: 1 },
    ],
  },
  comments: { legal: true, annotation: false, jsdoc: false }, // less to scan at each start; the source maps keep them
});
await bundle.close();
// the bin is run directly (the `cotal` link on PATH, infra/install-cli.sh): executable, as npm would make it
await chmod(`${next}/cotal.js`, 0o755);
await rm(out, { recursive: true, force: true });
await rename(next, out);
