/**
 * MutationIntent is one shape per op (saga/mutation.ts): `resume` is an op of its own, never "a batch
 * with nothing in it". A resume claims nothing and takes a rollback as its resolution; any other op
 * that finds an interrupted claim rolled back refuses `rolled-back`, an empty batch included.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runMutation, type MutationIntent } from "../src/saga/mutation.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { add, crashAt, expectCode, record, resumeOnly } from "./saga-memory-helpers.js";

let s: MemorySaga;
afterEach(() => s?.close());

describe("the resume op", () => {
  it("on a clean record: noop, nothing claimed or reloaded", async () => {
    s = memorySaga();
    const r = await runMutation(s.env, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", generation: 1, added: [], removed: [] });
    expect(s.store.writes.filter((w) => w.op === "update")).toEqual([]);
    expect(s.reloader?.calls).toBe(0);
  });

  it("an interrupted claim rolled back is the resume's resolution (a notice), and an empty batch's refusal", async () => {
    s = memorySaga();
    await crashAt("after-materialise", () => runMutation(s.env, add("beta")));
    const notices: string[] = [];
    const r = await runMutation({ ...s.env, onNotice: (m) => notices.push(m) }, resumeOnly);
    expect(r).toMatchObject({ outcome: "noop", resumed: "rollback-unstaged" });
    expect(notices.some((n) => n.startsWith("rolled back add +beta"))).toBe(true);
    expect(record(s).pending).toBeNull();

    await crashAt("after-materialise", () => runMutation(s.env, add("gamma")));
    const emptyBatch: MutationIntent = { op: "batch", adds: [], verb: "space add" };
    await expectCode(runMutation(s.env, emptyBatch), "rolled-back");
  });
});
