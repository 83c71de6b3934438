import { guardsFromEnv, handGuards, type Guards } from "@cotal/saga";

/**
 * The guards a test process runs the core with: built from its environment (`COTAL_TEST_UNSAFE_<NAME>=1`,
 * what scripts/ablate.sh sets on the run), like the CLI's entry builds them, and handed to the core's sites
 * an explicit `guards` does not reach yet. In-process calls pass the returned object explicitly.
 */
export function testGuards(env: Readonly<Record<string, string | undefined>> = process.env): Guards {
  const guards = guardsFromEnv(env);
  handGuards(guards);
  return guards;
}
