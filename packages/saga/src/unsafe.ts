import { GUARDS_ON, type Guards, type GuardSwitch } from "./guards.js";

// Transitional (issue #30, "Guards handed in, not read"): the guards an entry handed in, for the core's call
// sites an explicit `guards` does not reach yet. Nothing here reads the environment: an entry builds the
// guards (`guardsFromEnv`, guards.ts) and hands them in once, before it calls a verb. Every other site
// takes its guards as a parameter; this module goes once the last `unsafe(` caller is converted.
let handed: Guards = GUARDS_ON;

/** Called by entries only (the CLI, the worker, the test harness), with the guards they pass explicitly too. */
export function handGuards(guards: Guards): void {
  handed = guards;
}

/** The guards handed in: for a call site not yet reached by an explicit `guards` (see above). */
export function handedGuards(): Guards {
  return handed;
}

export function unsafe(name: GuardSwitch): boolean {
  return handed[name];
}
