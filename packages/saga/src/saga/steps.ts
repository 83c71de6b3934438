/** Saga step names: failpoints (`COTAL_FAILPOINT=<name>:exit`) and timings use exactly these. */
export const SAGA_STEPS = [
  "after-read",
  "after-lease",
  "after-claim",
  "after-materialise",
  "after-stage",
  "before-rename",
  "after-rename",
  "after-proof",
  "after-commit",
] as const;
export type SagaFailpoint = (typeof SAGA_STEPS)[number];

/** What a benchmark breaks a mutation down into. */
export type SagaTiming = "read" | "lease" | "decide" | "claim" | "materialise" | "render-stage" | "promote" | "reload-proof" | "reconnect" | "commit" | "release";
