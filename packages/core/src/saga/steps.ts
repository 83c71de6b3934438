/**
 * The mutation saga's failpoints (`COTAL_FAILPOINT=<name>:<action>`, failpoints.ts), in the order it
 * reaches them; each is named after the step it follows or precedes in docs/saga.md "The steps",
 * whose table also gives each step's timing (SAGA_TIMINGS below).
 */
export const SAGA_STEPS = [
  "after-read",
  "after-lease",
  "before-claim",
  "after-claim",
  "after-materialise",
  "after-stage",
  "before-rename",
  "after-rename",
  "after-proof",
  "after-commit",
] as const;
export type SagaFailpoint = (typeof SAGA_STEPS)[number];

/** What a benchmark breaks a mutation down into, in the order the saga runs them (saga/mutation.ts). */
export const SAGA_TIMINGS = ["read", "lease", "decide", "claim", "materialise", "render-stage", "promote", "reload-proof", "reconnect", "commit", "release"] as const;
export type SagaTiming = (typeof SAGA_TIMINGS)[number];

/** The one preamble's steps before a live verb's saga (verb/verb.ts): its store connection, the lock, the journal (and the reaping beside it), the certain inventory. */
export const VERB_STEPS = ["connect", "lock", "journal", "inventory"] as const;
export type VerbStep = (typeof VERB_STEPS)[number];

/**
 * A step starting, or done after `ms` (each step runs at most once per attempt, in the order above;
 * a lost CAS re-runs the saga's from "read"). `generation`: the one the mutation claims, once claimed.
 */
export type SagaPhase = { step: VerbStep | SagaTiming; state: "start" } | { step: VerbStep | SagaTiming; state: "done"; ms: number; generation?: number };

/** Told each phase of a verb and its saga as it starts and ends (SagaEnv.onPhase, SessionHooks.onPhase): the CLI's phase line and log lines. */
export type PhaseListener = (e: SagaPhase) => void;

/** Runs `fn` as the phase `step`: a start event, then a done event with its time, thrown or not. */
export async function inPhase<T>(on: PhaseListener | undefined, step: VerbStep | SagaTiming, fn: () => Promise<T> | T): Promise<T> {
  if (!on) return fn();
  on({ step, state: "start" });
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    on({ step, state: "done", ms: performance.now() - t0 });
  }
}
