/**
 * The phase events a verb's feedback draws from (steps.ts SagaPhase): each step that runs starts and
 * ends once, in the order of SAGA_TIMINGS / VERB_STEPS, and a step that does not run says nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runMutation } from "../src/saga/mutation.js";
import { SAGA_TIMINGS, VERB_STEPS, type SagaPhase } from "../src/saga/steps.js";
import { withVerb } from "../src/verb/verb.js";
import { GUARDS_ON } from "../src/guards.js";
import { createTempRoot, memorySaga, type MemorySaga, type TempRoot } from "../src/testing/index.js";
import { add, expectConverged } from "./saga-memory-helpers.js";

let s: MemorySaga | undefined;
let t: TempRoot | undefined;
afterEach(() => {
  s?.close();
  t?.remove();
  s = t = undefined;
});

/** The events' steps, checked pairwise: every start is followed by its own done before the next start. */
function stepsOf(events: SagaPhase[]): string[] {
  const steps: string[] = [];
  for (let i = 0; i < events.length; i += 2) {
    const [start, done] = [events[i], events[i + 1]];
    expect(start?.state, `event ${i}`).toBe("start");
    expect(done, `event ${i + 1}`).toMatchObject({ step: start?.step, state: "done", ms: expect.any(Number) });
    steps.push(start?.step as string);
  }
  return steps;
}

const inOrder = (steps: readonly string[], order: readonly string[]) => expect(steps.map((x) => order.indexOf(x))).toEqual(steps.map((x) => order.indexOf(x)).sort((a, b) => a - b));

describe("the saga's phase events", () => {
  it("a committed add: every saga step, once each, in SAGA_TIMINGS order; the generation from the claim on", async () => {
    s = memorySaga();
    const events: SagaPhase[] = [];
    const r = await runMutation({ ...s.env, onPhase: (e) => events.push(e) }, add("beta", "gamma"));
    expect(r.outcome).toBe("committed");
    expectConverged(s, ["beta", "default", "gamma"], 2);
    const steps = stepsOf(events);
    expect(steps).toEqual([...SAGA_TIMINGS]);
    inOrder(steps, SAGA_TIMINGS);
    const done = events.filter((e): e is Extract<SagaPhase, { state: "done" }> => e.state === "done");
    expect(done.filter((e) => e.generation !== undefined).map((e) => e.step)).toEqual(SAGA_TIMINGS.slice(SAGA_TIMINGS.indexOf("claim")));
    expect(new Set(done.map((e) => e.generation).filter((g) => g !== undefined))).toEqual(new Set([2]));
  });

  it("a no-op add: read, lease, decide, release, and nothing it did not run", async () => {
    s = memorySaga();
    const events: SagaPhase[] = [];
    const r = await runMutation({ ...s.env, onPhase: (e) => events.push(e) }, add("default"));
    expect(r.outcome).toBe("noop");
    expect(stepsOf(events)).toEqual(["read", "lease", "decide", "release"]);
    expect(events.some((e) => e.state === "done" && e.generation !== undefined)).toBe(false);
  });

  it("offline (no running broker): no reload, no reconnect, no commit", async () => {
    s = memorySaga({ offline: true });
    const events: SagaPhase[] = [];
    const r = await runMutation({ ...s.env, onPhase: (e) => events.push(e) }, add("beta"));
    expect(r.outcome).toBe("promoted");
    expect(stepsOf(events)).toEqual(SAGA_TIMINGS.filter((x) => x !== "reload-proof" && x !== "reconnect" && x !== "commit"));
  });

  it("a verb's decision read is the verb's: the saga then starts at the lease", async () => {
    s = memorySaga();
    const events: SagaPhase[] = [];
    const decided = await s.store.read();
    await runMutation({ ...s.env, onPhase: (e) => events.push(e) }, add("beta"), decided);
    expect(stepsOf(events)[0]).toBe("lease");
  });
});

describe("the preamble's phase events", () => {
  it("lock, journal, inventory in VERB_STEPS order before the verb's body; no inventory when the verb needs none", async () => {
    t = createTempRoot();
    const events: SagaPhase[] = [];
    let seenInBody: string[] = [];
    await withVerb({ root: t.layout.root, guards: GUARDS_ON, purpose: "phase test", journal: { verb: "space add" }, onPhase: (e) => events.push(e) }, async () => {
      seenInBody = stepsOf(events);
    });
    expect(seenInBody).toEqual(["lock", "journal", "inventory"]);
    inOrder(seenInBody, VERB_STEPS);
    events.length = 0;
    await withVerb({ root: t.layout.root, guards: GUARDS_ON, purpose: "phase test", journal: { verb: "space add" }, certain: false, onPhase: (e) => events.push(e) }, async () => undefined);
    expect(stepsOf(events)).toEqual(["lock", "journal"]);
  });
});
