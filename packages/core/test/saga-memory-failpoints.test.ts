/**
 * A crash at every saga step (COTAL_FAILPOINT=<step>:throw), then a resume from the durable
 * in-memory state (`up` on a running root), then the verb re-run: every path converges on the
 * committed list, its render at server.conf, no staged file, and exactly the records it names.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ResumeAction } from "../src/inventory/resume-decision.js";
import { runMutation } from "../src/saga/mutation.js";
import { SAGA_STEPS, type SagaFailpoint } from "../src/saga/steps.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { add, crashAt, expectConverged, hasRecord, remove, resumeOnly } from "./saga-memory-helpers.js";

let s: MemorySaga;
afterEach(() => s?.close());

/** What the resume table decides after a crash at each step, and whether the crashed change survived it. */
const AFTER_CRASH: Record<SagaFailpoint | "before-claim", { resumed: ResumeAction | undefined; survives: boolean }> = {
  "after-read": { resumed: undefined, survives: false },
  "after-lease": { resumed: undefined, survives: false },
  "before-claim": { resumed: undefined, survives: false },
  "after-claim": { resumed: "rollback-unstaged", survives: false },
  "after-materialise": { resumed: "rollback-unstaged", survives: false },
  "after-stage": { resumed: "rollback-staged", survives: false },
  "before-rename": { resumed: "rollback-staged", survives: false },
  "after-rename": { resumed: "complete-forward", survives: true },
  "after-proof": { resumed: "commit-only", survives: true },
  "after-commit": { resumed: undefined, survives: true },
};
const STEPS = Object.keys(AFTER_CRASH) as (keyof typeof AFTER_CRASH)[];

it("the sweep covers every saga step", () => {
  expect(new Set(STEPS)).toEqual(new Set([...SAGA_STEPS, "before-claim"]));
});

describe("space add beta, crashed at each step", () => {
  for (const step of STEPS) {
    it(step, async () => {
      s = memorySaga();
      await crashAt(step, () => runMutation(s.env, add("beta")));

      const resumed = await runMutation(s.env, resumeOnly);
      const { resumed: expected, survives } = AFTER_CRASH[step];
      expect(resumed.resumed).toBe(expected);
      if (survives) expectConverged(s, ["beta", "default"], 2);
      else {
        expectConverged(s, ["default"], 1);
        expect(hasRecord(s, "beta")).toBe(false); // a rollback deletes what the claim minted
      }

      const again = await runMutation(s.env, add("beta"));
      expect(again.outcome).toBe(survives ? "noop" : "committed");
      expectConverged(s, ["beta", "default"], 2);
    });
  }
});

describe("space rm beta, crashed at each step", () => {
  for (const step of STEPS) {
    it(step, async () => {
      s = memorySaga();
      await runMutation(s.env, add("beta"));
      await crashAt(step, () => runMutation(s.env, remove("beta")));

      const resumed = await runMutation(s.env, resumeOnly);
      const { resumed: expected, survives } = AFTER_CRASH[step];
      expect(resumed.resumed).toBe(expected);
      if (survives) expectConverged(s, ["default"], 3);
      else expectConverged(s, ["beta", "default"], 2);
      expect(hasRecord(s, "beta")).toBe(true); // a removal's rollback never deletes a record it did not mint

      const again = await runMutation(s.env, remove("beta"));
      expect(again.outcome).toBe(survives ? "noop" : "committed");
      expectConverged(s, ["default"], 3);
    });
  }
});

describe("a crash, then the same verb re-run straight away (no `up` in between)", () => {
  for (const step of STEPS) {
    it(step, async () => {
      s = memorySaga();
      await crashAt(step, () => runMutation(s.env, add("beta")));
      const { resumed, survives } = AFTER_CRASH[step];
      const rolledBack = resumed === "rollback-unstaged" || resumed === "rollback-staged";
      if (rolledBack) {
        // the re-run finds the interrupted claim, rolls it back, and tells the operator to re-run
        await expect(runMutation(s.env, add("beta"))).rejects.toMatchObject({ code: "rolled-back" });
        expectConverged(s, ["default"], 1);
      }
      const r = await runMutation(s.env, add("beta"));
      expect(r.outcome).toBe(survives ? "noop" : "committed");
      expectConverged(s, ["beta", "default"], 2);
    });
  }
});
