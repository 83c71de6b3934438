import { CotalError, type SpaceAddOptions, type SpaceAddResult } from "@cotal/core";
import { UnrecoverableError } from "bullmq";
import { describe, expect, it } from "vitest";
import { BLOCKED_KEY, BLOCKED_RETRY_DEFAULTS, classifyBlock, decideBlocked, jitterFor, nextBlockedRetry, splitJobData, type JournalLike, type RootProbe } from "../src/blocked-retry.js";
import { WORKER_DEFAULTS, workerConfig } from "../src/config.js";
import { parsePayload } from "../src/payloads.js";
import { spaceAddBatchRunner } from "../src/space-add-batch.js";

/** The root as a test sets it: who holds the lock, what the journal holds now. */
function probe(lockHeld: boolean, journal: JournalLike | undefined): RootProbe & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    lockHeld: () => (reads.push("lock"), lockHeld),
    journal: () => (reads.push("journal"), journal),
  };
}

const removal = { op: "space-rm", space: "doomed", startedAt: "2026-12-05T23:00:00.000Z" };
const blockedBy = (entry: JournalLike | undefined, next = "cotal space rm doomed --yes   # re-running it finishes the removal") =>
  new CotalError("journal-blocked", `a removal of space doomed is unfinished; space add waits for it`, { next, ...(entry ? { details: { journal: entry } } : {}) });

describe("which refusals a queued job waits out (docs/commands/jobs.md, \"Busy and blocked roots\")", () => {
  it("lock-held is a live holder: transient, without reading the root", () => {
    const p = probe(false, undefined);
    expect(classifyBlock(new CotalError("lock-held", "held by pid 7"), "/r", p)).toBe("transient");
    expect(p.reads).toEqual([]);
  });

  it("a removal's journal while a live process holds the lock: transient", () => {
    expect(classifyBlock(blockedBy(removal), "/r", probe(true, removal))).toBe("transient");
  });

  it("the same removal entry standing with the lock free: its verb died, the operator re-runs it (final)", () => {
    const p = probe(false, { ...removal, streamsDeleted: true } as JournalLike);
    expect(classifyBlock(blockedBy(removal), "/r", p)).toBe("final");
    expect(p.reads).toEqual(["lock", "journal"]); // the lock first: an entry read after a free lock cannot be a running verb's
  });

  it("the entry gone or replaced since the refusal: it was a running verb's (transient)", () => {
    expect(classifyBlock(blockedBy(removal), "/r", probe(false, undefined))).toBe("transient");
    expect(classifyBlock(blockedBy(removal), "/r", probe(false, { ...removal, startedAt: "2026-12-05T23:59:00.000Z" }))).toBe("transient");
  });

  it("a rotation is lock-bound like a removal", () => {
    const rot = { op: "rotate-sys", generation: 3, startedAt: "t" };
    expect(classifyBlock(blockedBy(rot), "/r", probe(true, rot))).toBe("transient");
    expect(classifyBlock(blockedBy(rot), "/r", probe(false, rot))).toBe("final");
  });

  it("a cut, a stopped backup's quiesce or restore, or no entry at all waits for an operator: final even under a held lock", () => {
    for (const entry of [{ op: "cut", state: "ready", cutId: "c1", startedAt: "t" }, { op: "quiesce", space: "a", startedAt: "t" }, undefined]) {
      const p = probe(true, entry);
      expect(classifyBlock(blockedBy(entry), "/r", p)).toBe("final");
      expect(p.reads).toEqual([]);
    }
  });

  it("anything else is not a block: the error table and BullMQ's attempts decide", () => {
    expect(classifyBlock(new CotalError("conflict", "moved"), "/r", probe(true, removal))).toBe("other");
    expect(classifyBlock(new CotalError("foreign-operator", "x"), "/r", probe(true, removal))).toBe("other");
    expect(classifyBlock(new Error("socket hang up"), "/r", probe(true, removal))).toBe("other");
  });
});

describe("the bounded backoff", () => {
  const opts = { windowMs: 600_000, baseMs: 1_000, capMs: 30_000 };

  it("doubles from the base up to the cap, half of each step jittered", () => {
    const delays = (jitter: number) => Array.from({ length: 8 }, (_, tries) => (nextBlockedRetry({ since: 0, tries }, 0, opts, jitter)?.at ?? NaN));
    expect(delays(0)).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    expect(delays(0.999999)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    expect(nextBlockedRetry(undefined, 5_000, opts, 0.5)).toEqual({ at: 5_750, state: { since: 5_000, tries: 1 } });
  });

  it("is bounded: on a fake clock a job that stays blocked stops at the window's end, whatever the jitter", () => {
    for (const jitter of [0, 0.37, 0.999]) {
      let now = 1_000_000;
      let state: { since: number; tries: number } | undefined;
      let retries = 0;
      for (;;) {
        const next = nextBlockedRetry(state, now, opts, jitter);
        if (!next) break;
        expect(next.at).toBeGreaterThan(now);
        expect(next.at).toBeLessThanOrEqual(1_000_000 + opts.windowMs);
        ({ state } = next);
        now = next.at;
        retries++;
        expect(retries).toBeLessThan(100);
      }
      expect(now).toBe(1_000_000 + opts.windowMs); // the last retry lands on the window's end, then the job fails
      expect(retries).toBeGreaterThan(15);
    }
  });

  it("a window of 0 fails at once", () => {
    expect(nextBlockedRetry(undefined, 42, { ...opts, windowMs: 0 }, 0.5)).toBeUndefined();
  });

  it("defaults: 10 minutes from 1 s, capped at 30 s; COTAL_JOBS_BLOCKED_RETRY_MS, then the flag, override it", () => {
    expect(BLOCKED_RETRY_DEFAULTS).toEqual({ windowMs: 600_000, baseMs: 1_000, capMs: 30_000 });
    expect(workerConfig("/r", {}, {}).blockedRetryMs).toBe(WORKER_DEFAULTS.blockedRetryMs);
    expect(workerConfig("/r", {}, { COTAL_JOBS_BLOCKED_RETRY_MS: "0" }).blockedRetryMs).toBe(0);
    expect(workerConfig("/r", { blockedRetryMs: 5 }, { COTAL_JOBS_BLOCKED_RETRY_MS: "0" }).blockedRetryMs).toBe(5);
    expect(() => workerConfig("/r", {}, { COTAL_JOBS_BLOCKED_RETRY_MS: "soon" })).toThrow(/COTAL_JOBS_BLOCKED_RETRY_MS/);
  });
});

describe("what a blocked job does", () => {
  const opts = { windowMs: 60_000, baseMs: 1_000, capMs: 30_000 };

  it("a running removal: delayed, its state counting from the first block", () => {
    const d = decideBlocked(blockedBy(removal), { root: "/r", state: undefined, now: 100, opts, jitter: 0, probe: probe(true, removal) });
    expect(d).toEqual({ kind: "delay", at: 600, state: { since: 100, tries: 1 } });
  });

  it("past the window, or a dead removal's journal: fails for good with the refusal's own next", () => {
    const spent = decideBlocked(blockedBy(removal), { root: "/r", state: { since: 0, tries: 9 }, now: 60_000, opts, jitter: 0, probe: probe(true, removal) });
    expect(spent.kind).toBe("fail");
    const e = (spent as { error: Error }).error;
    expect(e).toBeInstanceOf(UnrecoverableError);
    expect(e.message).toBe("[journal-blocked] a removal of space doomed is unfinished; space add waits for it; still blocked after 60 s of retries (next: cotal space rm doomed --yes   # re-running it finishes the removal)");

    const dead = decideBlocked(blockedBy(removal), { root: "/r", state: undefined, now: 0, opts, jitter: 0, probe: probe(false, removal) });
    expect((dead as { error: Error }).error.message).toBe("[journal-blocked] a removal of space doomed is unfinished; space add waits for it (next: cotal space rm doomed --yes   # re-running it finishes the removal)");

    const held = decideBlocked(new CotalError("lock-held", "held by pid 7", { next: "wait for pid 7" }), { root: "/r", state: undefined, now: 0, opts: { ...opts, windowMs: 0 }, jitter: 0 });
    expect((held as { error: Error }).error.message).toBe("[lock-held] held by pid 7 (next: wait for pid 7)");
  });

  it("anything else is left to failures.ts", () => {
    expect(decideBlocked(new CotalError("conflict", "moved"), { root: "/r", state: undefined, now: 0, opts, jitter: 0 })).toEqual({ kind: "other" });
  });

  it("the state rides beside the payload and is stripped before the payload is validated", () => {
    const data = { root: "/r", name: "t1", [BLOCKED_KEY]: { since: 5, tries: 2 } };
    const { payload, state } = splitJobData(data);
    expect(state).toEqual({ since: 5, tries: 2 });
    expect(parsePayload("space-add", payload)).toEqual({ root: "/r", name: "t1" });
    expect(splitJobData({ root: "/r", name: "t1" })).toEqual({ payload: { root: "/r", name: "t1" }, state: undefined });
    expect(splitJobData({ root: "/r", name: "t1", [BLOCKED_KEY]: { since: "x" } }).state).toBeUndefined();
  });

  it("one jitter per refusal: the jobs of one batch come back together", () => {
    const err = blockedBy(removal);
    let n = 0;
    const random = () => ++n / 10;
    expect(jitterFor(err, random)).toBe(0.1);
    expect(jitterFor(err, random)).toBe(0.1);
    expect(jitterFor(blockedBy(removal), random)).toBe(0.2);
  });
});

function fakeResult(names: string[], present: Set<string>): SpaceAddResult {
  const added = names.filter((n) => !present.has(n));
  for (const n of added) present.add(n);
  return { outcome: added.length ? "committed" : "noop", generation: present.size, spaces: [...present], added, removed: [], attempts: 1, conflicts: 0, reloads: added.length ? 1 : 0, requested: names, provisioned: [] };
}

describe("a batch that meets a busy root", () => {
  it("fails every job with the one refusal (no name-by-name re-run); retried, each tenant is added once", async () => {
    const present = new Set<string>(["alpha"]);
    const calls: string[][] = [];
    let blocked = true;
    const run = spaceAddBatchRunner({
      root: "/r",
      lockWaitMs: 1,
      add: async (o: SpaceAddOptions) => {
        calls.push(o.names);
        if (blocked) throw blockedBy(removal);
        return fakeResult(o.names, present);
      },
    });
    const items = [
      { name: "t1", jobId: "1" },
      { name: "t2", jobId: "2" },
      { name: "t1", jobId: "1" }, // a re-delivered job beside its earlier self
    ];
    const first = await run("k", items);
    expect(calls).toEqual([["t1", "t2"]]);
    expect(first.every((r) => !r.ok)).toBe(true);
    const errors = new Set(first.map((r) => (r as { error: unknown }).error));
    expect(errors.size).toBe(1); // the refusal itself, shared: the worker classifies it, one jitter for all
    expect([...errors][0]).toBeInstanceOf(CotalError);

    blocked = false;
    const again = await run("k", items);
    expect(again.map((r) => (r.ok ? r.value.outcome : "err"))).toEqual(["added", "added", "added"]);
    expect([...present].sort()).toEqual(["alpha", "t1", "t2"]);
    const twice = await run("k", items.slice(0, 1)); // a duplicate delivery after the commit: the KV record says present
    expect(twice.map((r) => (r.ok ? r.value.outcome : "err"))).toEqual(["already-present"]);
  });

  it("a block met while a refused batch runs name by name is handed on as the refusal too", async () => {
    const run = spaceAddBatchRunner({
      root: "/r",
      lockWaitMs: 1,
      add: async (o: SpaceAddOptions) => {
        if (o.names.includes("foreign")) throw new CotalError("foreign-operator", "signed by another operator");
        if (o.names.length === 1) throw blockedBy(removal);
        return fakeResult(o.names, new Set());
      },
    });
    const res = await run("k", [
      { name: "a", jobId: "a" },
      { name: "foreign", jobId: "f" },
    ]);
    expect((res[0] as { error: unknown }).error).toBeInstanceOf(CotalError);
    expect(((res[1] as { error: Error }).error as Error).name).toBe("UnrecoverableError");
  });
});
