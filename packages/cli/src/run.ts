import { guardsFromEnv, sagaLimitsFromEnv } from "@cotal/core/light";
import { exitFlushed } from "./exit.js";
import { main } from "./program.js";

/**
 * The full CLI, which bin.ts requires (the bundle's run.cjs) for everything its quick answers do not
 * cover: commander, the command tree, and a verb's own modules when its action runs.
 */
export async function run(argv: string[]): Promise<void> {
  // The CLI's entry builds the guards (docs/ablation.md: COTAL_TEST_UNSAFE_<NAME>=1, test-only) and the saga's
  // test knobs (COTAL_SAGA_MAX_ATTEMPTS, COTAL_LEASE_WAIT_MS) and hands them down; the core never reads the environment for them.
  const guards = guardsFromEnv(process.env);
  const code = await main(argv, { guards, saga: sagaLimitsFromEnv(process.env) });
  // A finished verb exits now, whatever handle a library left open: a connection to a stopped (SIGSTOP)
  // server would otherwise keep the process alive for ever after its refusal was printed (issue #28,
  // finding 3; docs/refusals.md, "Bounded time"). Long-running verbs (worker, dashboard, foreground up)
  // return from main only when they are done; what they printed still reaches the reader (exit.ts).
  // The test-only switch (docs/ablation.md) keeps the old way: exit when the event loop drains, if ever.
  if (guards.LINGER_AFTER_VERB) process.exitCode = code;
  else await exitFlushed(code);
}
