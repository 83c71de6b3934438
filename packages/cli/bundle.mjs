// The installed `cotal` (package.json "bin"): one rolldown bundle of the CLI and every workspace package it
// loads (saga, jobs, dashboard: one copy of each, so errors keep their class), from tsc's dist/. Node then
// loads a handful of files instead of ~250 modules at every start (docs/development.md, "The CLI bundle").
// Packages that read their own files at run time or start worker threads (BullMQ, pino's transports, Bull
// Board's UI, express) stay external: they load only in the verbs that need them, resolved from this
// package's own dependencies.
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
await bundle.write({ dir: next, format: "esm", entryFileNames: "[name].js", chunkFileNames: "chunk-[name]-[hash].js", sourcemap: true });
await bundle.close();
// the bin is run directly (the `cotal` link on PATH, infra/install-cli.sh): executable, as npm would make it
await chmod(`${next}/cotal.js`, 0o755);
await rm(out, { recursive: true, force: true });
await rename(next, out);
