/**
 * Test-only switches that each disable exactly one guard, so a live cell can show it goes red
 * without it (docs/ablation.md). Inert unless `COTAL_TEST_UNSAFE_<NAME>=1` is set; never set in use.
 */
export const UNSAFE_SWITCHES = [
  /** Claims and commits become last-writer-wins (the R1 lost update). */
  "DISABLE_CAS",
  /** Promotion skips the step-6 lease re-check (a paused writer resurrects a removed tenant). */
  "DISABLE_FENCE",
  /** A standing space-rm journal no longer blocks other verbs (reconcile re-admits the tenant). */
  "IGNORE_JOURNAL",
] as const;

export type UnsafeSwitch = (typeof UNSAFE_SWITCHES)[number];

export function unsafe(name: UnsafeSwitch): boolean {
  return process.env[`COTAL_TEST_UNSAFE_${name}`] === "1";
}
