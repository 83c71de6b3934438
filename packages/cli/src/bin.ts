#!/usr/bin/env node
import { main } from "./program.js";

// `cotal status | head` closes the pipe early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
