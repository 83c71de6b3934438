#!/usr/bin/env node
import module from "node:module";
import { guardsFromEnv, sagaLimitsFromEnv } from "@cotal/core/light";
import { exitFlushed } from "./exit.js";
import { main } from "./program.js";

// Node >= 22.1 keeps V8's compiled code between runs, so the core a verb imports is not compiled anew each
// time (issue 35); Node 20 has no such call and runs as before.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// `cotal status | head` closes the pipe early: that is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

// The CLI's entry builds the guards (docs/ablation.md: COTAL_TEST_UNSAFE_<NAME>=1, test-only) and the saga's
// test knobs (COTAL_SAGA_MAX_ATTEMPTS, COTAL_LEASE_WAIT_MS) and hands them down; the core never reads the environment for them.
const guards = guardsFromEnv(process.env);
const code = await main(process.argv.slice(2), { guards, saga: sagaLimitsFromEnv(process.env) });
// A finished verb exits now, whatever handle a library left open: a connection to a stopped (SIGSTOP)
// server would otherwise keep the process alive for ever after its refusal was printed (issue #28,
// finding 3; docs/refusals.md, "Bounded time"). Long-running verbs (worker, dashboard, foreground up)
// return from main only when they are done; what they printed still reaches the reader (exit.ts).
// The test-only switch (docs/ablation.md) keeps the old way: exit when the event loop drains, if ever.
if (guards.LINGER_AFTER_VERB) process.exitCode = code;
else await exitFlushed(code);
