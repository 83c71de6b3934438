#!/usr/bin/env node
import { fstatSync, readFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { codeCacheDir, compileWithCodeCache } from "./code-cache.js";
import { quickAnswer, stdoutHelpWidth, type QuickAnswers } from "./quick-answer.js";

// `cotal status | head` closes the pipe early: that is the reader's choice, not an error.
function exitQuietlyOnEpipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
}

/** The bundle's build-time answers (bundle.mjs writes them beside cotal.js); unreadable ones leave every command to the full CLI. */
function quickAnswers(): QuickAnswers | undefined {
  try {
    return JSON.parse(readFileSync(new URL("./quick-answers.json", import.meta.url), "utf8")) as QuickAnswers;
  } catch {
    return undefined;
  }
}

/**
 * A quick answer for `argv`, written to stdout; false when the full CLI must run. A pipe or a file (not a
 * character device) is never a TTY, so it gets commander's width for them (80) and the text goes straight
 * to fd 1: building `process.stdout` would load Node's streams, ~3 ms of a ~70 ms start. A terminal gets
 * its own width from `process.stdout`, as commander reads it.
 */
function answeredQuickly(argv: readonly string[]): boolean {
  const answers = argv.length === 1 ? quickAnswers() : undefined;
  if (!answers) return false;
  let terminal: boolean;
  try {
    terminal = fstatSync(1).isCharacterDevice();
  } catch {
    return false; // no stdout at all: the full CLI reports as it always has
  }
  const text = quickAnswer(argv, terminal ? stdoutHelpWidth(process.stdout) : 80, answers);
  if (text === undefined) return false;
  if (terminal) {
    exitQuietlyOnEpipe();
    process.stdout.write(text);
  } else writeAll(text);
  return true;
}

function writeAll(text: string): void {
  const buf = Buffer.from(text);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(1, buf, off);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EPIPE") return; // the reader left: exit 0, as exitQuietlyOnEpipe does
    if (code !== "EAGAIN") throw e;
    // a full non-blocking pipe: the stream queues the rest and exits once it is written
    exitQuietlyOnEpipe();
    process.stdout.write(buf.subarray(off));
  }
}

const argv = process.argv.slice(2);
// `cotal --version` and `cotal --help` are answered before commander and the command tree load (issue 35:
// they cost ~20 ms over node's own ~70 ms start); the text is the program's own, rendered at build time.
if (!answeredQuickly(argv)) {
  exitQuietlyOnEpipe();
  // The CLI proper, CommonJS (bundle.mjs), its chunks compiled with V8's cached code of earlier runs
  // (code-cache.ts; Node >= 22.1 would do this itself with module.enableCompileCache).
  const here = dirname(fileURLToPath(import.meta.url));
  const cacheDir = codeCacheDir();
  if (cacheDir) compileWithCodeCache(here, cacheDir);
  const { run } = createRequire(import.meta.url)("./run.cjs") as typeof import("./run.js");
  // a rejection still ends the process, as an uncaught error
  void run(argv);
}
