import { guardsFromEnv, type Guards } from "@cotal/core/light";

/**
 * The guards a test process runs the core with in-process: built from its environment
 * (`COTAL_TEST_UNSAFE_<NAME>=1`, what scripts/ablate.sh sets on the run), as the CLI's entry builds them for
 * the cotal processes a test starts. In-process calls pass the returned object explicitly.
 */
export function testGuards(env: Readonly<Record<string, string | undefined>> = process.env): Guards {
  return guardsFromEnv(env);
}
