/**
 * SagaEnv.onAttempt: what the exporter counts as saga attempts and conflicts (docs/metrics.md). Each
 * attempt reports once, a lost CAS as a conflict, a refusal as an error; the core reads no env for it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { decisionRead, runMutation, type SagaEnv } from "../src/saga/mutation.js";
import { memorySaga, type MemorySaga, type StoreFault } from "../src/testing/index.js";
import { add, expectCode } from "./saga-memory-helpers.js";

let s: MemorySaga | undefined;
afterEach(() => {
  s?.close();
  s = undefined;
});

const committedElsewhere: StoreFault = { kind: "concurrent-write", mutate: (r) => ({ ...r, generation: r.generation + 1, appliedGeneration: r.generation + 1 }) };
type Attempt = Parameters<NonNullable<SagaEnv["onAttempt"]>>[0];

describe("the saga's attempt hook", () => {
  it("a conflict then a commit: one conflict, one ok, as the result's attempts and conflicts say", async () => {
    s = memorySaga();
    const decided = await decisionRead(s.env.store);
    s.store.on("read", 2, committedElsewhere);
    const seen: Attempt[] = [];
    const r = await runMutation({ ...s.env, onAttempt: (a) => seen.push(a) }, add("beta"), decided);
    expect(r).toMatchObject({ attempts: 2, conflicts: 1 });
    expect(seen).toEqual([
      { op: "add", outcome: "conflict" },
      { op: "add", outcome: "ok" },
    ]);
  });

  it("a writer that keeps moving the record: every attempt a conflict, up to maxAttempts", async () => {
    s = memorySaga();
    s.store.on("read", (n) => n % 2 === 0, committedElsewhere);
    const seen: Attempt[] = [];
    await expectCode(runMutation({ ...s.env, maxAttempts: 3, onAttempt: (a) => seen.push(a) }, add("beta")), "conflict");
    expect(seen.map((a) => a.outcome)).toEqual(["conflict", "conflict", "conflict"]);
  });

  it("reconcile's conflict is reported and never retried; a refusal that is not a conflict is one error attempt", async () => {
    s = memorySaga();
    const printed = (await decisionRead(s.env.store)).record;
    s.store.put({ ...printed, generation: 2, appliedGeneration: 2 });
    const seen: Attempt[] = [];
    await expectCode(runMutation({ ...s.env, onAttempt: (a) => seen.push(a) }, { op: "reconcile", target: ["default"], expectRevision: 1, verb: "broker reconcile --adopt-disk" }), "conflict");
    expect(seen).toEqual([{ op: "reconcile", outcome: "conflict" }]);
    s.close();
    s = memorySaga();
    s.store.on("update", 1, { kind: "lost-reply-unread", landed: false }); // the claim's reply lost, the key unreadable
    const errors: Attempt[] = [];
    await expectCode(runMutation({ ...s.env, onAttempt: (a) => errors.push(a) }, add("gamma")), "inventory-unreachable");
    expect(errors).toEqual([{ op: "add", outcome: "error" }]);
  });
});
