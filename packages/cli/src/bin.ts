#!/usr/bin/env node
import { unsafe } from "@cotal/saga/errors";
import { exitFlushed } from "./exit.js";
import { main } from "./program.js";

// `cotal status | head` closes the pipe early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

const code = await main(process.argv.slice(2));
// A finished verb exits now, whatever handle a library left open: a connection to a stopped (SIGSTOP)
// server would otherwise keep the process alive for ever after its refusal was printed (issue #28,
// finding 3; docs/refusals.md, "Bounded time"). Long-running verbs (worker, dashboard, foreground up)
// return from main only when they are done; what they printed still reaches the reader (exit.ts).
// The test-only switch (docs/ablation.md) keeps the old way: exit when the event loop drains, if ever.
if (unsafe("LINGER_AFTER_VERB")) process.exitCode = code;
else await exitFlushed(code);
