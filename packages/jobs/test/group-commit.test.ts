import { describe, expect, it } from "vitest";
import { CotalError, type SpaceAddOptions, type SpaceAddResult } from "@cotal/core";
import { GroupCommit, spaceAddBatchRunner, type ItemResult } from "../src/index.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("group commit", () => {
  it("caps batches at maxBatch and gives each submitter its own result", async () => {
    const batches: number[][] = [];
    const gc = new GroupCommit<number, number>({ maxBatch: 4, maxWaitMs: 100 }, async (_k, items) => {
      batches.push([...items]);
      await sleep(5);
      return items.map((x) => ({ ok: true, value: x * 10 }));
    });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => gc.submit("r", i)));
    expect(results).toEqual(Array.from({ length: 10 }, (_, i) => i * 10));
    expect(batches.map((b) => b.length)).toEqual([4, 4, 2]);
    expect(batches.flat().sort((a, b) => a - b)).toEqual([...Array(10).keys()]);
  });

  it("flushes a partial batch after maxWaitMs, not before", async () => {
    const flushedAt: number[] = [];
    const gc = new GroupCommit<string, string>({ maxBatch: 100, maxWaitMs: 80 }, async (_k, items) => {
      flushedAt.push(Date.now());
      return items.map((x) => ({ ok: true, value: x }));
    });
    const t0 = Date.now();
    const p = Promise.all([gc.submit("r", "a"), gc.submit("r", "b")]);
    await sleep(30);
    expect(flushedAt).toHaveLength(0); // still inside the window
    expect(await p).toEqual(["a", "b"]);
    expect(flushedAt[0]! - t0).toBeGreaterThanOrEqual(75);
    expect(flushedAt).toHaveLength(1);
  });

  it("runs one batch per key at a time; items arriving meanwhile form the next batch", async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const sizes: number[] = [];
    const gc = new GroupCommit<number, number>({ maxBatch: 50, maxWaitMs: 0 }, async (_k, items) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      sizes.push(items.length);
      await sleep(40);
      inFlight--;
      return items.map((x) => ({ ok: true, value: x }));
    });
    const first = gc.submit("r", 0);
    await sleep(5);
    const rest = Array.from({ length: 7 }, (_, i) => gc.submit("r", i + 1));
    await Promise.all([first, ...rest]);
    expect(maxInFlight).toBe(1);
    expect(sizes).toEqual([1, 7]);
    await gc.idle();
  });

  it("with maxInFlight 2 the next batch starts at the previous one's commit, never two committing at once", async () => {
    const events: string[] = [];
    let committing = 0;
    let maxCommitting = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const gc = new GroupCommit<number, number>({ maxBatch: 2, maxWaitMs: 20, maxInFlight: 2 }, async (_k, items, committed) => {
      const id = items.join("+");
      inFlight++;
      committing++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      maxCommitting = Math.max(maxCommitting, committing);
      events.push(`start ${id}`);
      await sleep(10); // the saga
      committing--;
      events.push(`commit ${id}`);
      committed();
      committed(); // idempotent
      await sleep(40); // the provisioning, overlapping the next batch's saga
      events.push(`end ${id}`);
      inFlight--;
      return items.map((x) => ({ ok: true, value: x }));
    });
    expect(await Promise.all(Array.from({ length: 6 }, (_, i) => gc.submit("r", i)))).toEqual([0, 1, 2, 3, 4, 5]);
    await gc.idle();
    expect(maxCommitting).toBe(1);
    expect(maxInFlight).toBe(2);
    expect(events.indexOf("start 2+3")).toBeGreaterThan(events.indexOf("commit 0+1"));
    expect(events.indexOf("start 2+3")).toBeLessThan(events.indexOf("end 0+1")); // overlap
    expect(events.indexOf("start 4+5")).toBeGreaterThan(events.indexOf("end 0+1")); // at most 2 in flight
  });

  it("without maxInFlight a batch that commits early still holds the key until it returns", async () => {
    const events: string[] = [];
    const gc = new GroupCommit<number, number>({ maxBatch: 1, maxWaitMs: 0 }, async (_k, items, committed) => {
      events.push(`start ${items[0]}`);
      committed();
      await sleep(20);
      events.push(`end ${items[0]}`);
      return items.map((x) => ({ ok: true, value: x }));
    });
    await Promise.all([gc.submit("r", 1), gc.submit("r", 2)]);
    expect(events).toEqual(["start 1", "end 1", "start 2", "end 2"]);
  });

  it("keeps keys (roots) apart", async () => {
    const seen: string[] = [];
    const gc = new GroupCommit<string, string>({ maxBatch: 10, maxWaitMs: 10 }, async (k, items) => {
      seen.push(`${k}:${items.join(",")}`);
      return items.map((x) => ({ ok: true, value: k }));
    });
    expect(await Promise.all([gc.submit("r1", "a"), gc.submit("r2", "b"), gc.submit("r1", "c")])).toEqual(["r1", "r2", "r1"]);
    expect(seen.sort()).toEqual(["r1:a,c", "r2:b"]);
  });

  describe("a closed window and items already on their way (arriving)", () => {
    // A burst the queue has claimed but not handed on: `total` items, the first at once, the rest after `lateMs`.
    function burst(gc: GroupCommit<number, number>, total: number, lateMs: number): Promise<number[]> {
      const first = gc.submit("r", 0);
      const rest = sleep(lateMs).then(() => Promise.all(Array.from({ length: total - 1 }, (_, i) => gc.submit("r", i + 1))));
      return Promise.all([first, rest]).then(([a, b]) => [a, ...b]);
    }
    const runner = (sizes: number[]) => async (_k: string, items: readonly number[]) => {
      sizes.push(items.length);
      return items.map((x) => ({ ok: true as const, value: x }));
    };

    it("waits past the window while more are coming, then takes the whole burst in one batch", async () => {
      const sizes: number[] = [];
      const asked: number[] = [];
      let submitted = 0;
      const held: (number | undefined)[] = [];
      const gc = new GroupCommit<number, number>(
        { maxBatch: 100, maxWaitMs: 20, maxHoldMs: 1_000, recheckMs: 5, arriving: async (_k, n) => (asked.push(n), submitted > n), onBatch: (b) => held.push(b.heldMs) },
        runner(sizes),
      );
      submitted = 10; // the queue's counts: all ten claimed already
      expect(await burst(gc, 10, 120)).toEqual([...Array(10).keys()]);
      expect(sizes).toEqual([10]);
      expect(held[0]).toBeGreaterThanOrEqual(60); // reported as held: from its closed window (20 ms) to the rest's arrival (120 ms)
      expect(asked[0]).toBe(1); // asked with what it held: the first item only
      expect(asked.length).toBeGreaterThan(1); // and again until the rest had come
    });

    it("control: without `arriving` the same burst leaves its first item alone", async () => {
      const sizes: number[] = [];
      const held: (number | undefined)[] = [];
      const gc = new GroupCommit<number, number>({ maxBatch: 100, maxWaitMs: 20, maxHoldMs: 1_000, onBatch: (b) => held.push(b.heldMs) }, runner(sizes));
      await burst(gc, 10, 120);
      expect(sizes).toEqual([1, 9]);
      expect(held).toEqual([undefined, undefined]); // nothing was held
    });

    it("stops holding at maxHoldMs after the first item, however long `arriving` says yes", async () => {
      const sizes: number[] = [];
      const gc = new GroupCommit<number, number>({ maxBatch: 100, maxWaitMs: 10, maxHoldMs: 60, recheckMs: 5, arriving: async () => true }, runner(sizes));
      const t0 = Date.now();
      const first = gc.submit("r", 0);
      await first;
      const waited = Date.now() - t0;
      expect(sizes).toEqual([1]);
      expect(waited).toBeGreaterThanOrEqual(55);
      expect(waited).toBeLessThan(400);
    });

    // A question with no usable answer counts as no: the batch goes when its window closes, or at the
    // latest when its hold runs out (a hung Redis holds nothing for ever).
    it.each([
      { what: "never answers", maxHoldMs: 80, atLeastMs: 70, arriving: () => new Promise<boolean>(() => undefined) },
      { what: "throws at once", maxHoldMs: 5_000, atLeastMs: 0, arriving: (): Promise<boolean> => { throw new Error("sync"); } },
      { what: "rejects", maxHoldMs: 5_000, atLeastMs: 0, arriving: () => Promise.reject(new Error("redis down")) },
    ])("a question that $what counts as no", async ({ maxHoldMs, atLeastMs, arriving }) => {
      const sizes: number[] = [];
      const gc = new GroupCommit<number, number>({ maxBatch: 100, maxWaitMs: 10, maxHoldMs, arriving }, runner(sizes));
      const t0 = Date.now();
      await gc.submit("r", 0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(atLeastMs);
      expect(Date.now() - t0).toBeLessThan(1_000);
      expect(sizes).toEqual([1]);
    });

    it("a full batch goes at once, without asking", async () => {
      const sizes: number[] = [];
      let asked = 0;
      const gc = new GroupCommit<number, number>({ maxBatch: 3, maxWaitMs: 10_000, maxHoldMs: 10_000, arriving: async () => (asked++, true) }, runner(sizes));
      await Promise.all([0, 1, 2].map((i) => gc.submit("r", i)));
      expect(sizes).toEqual([3]);
      expect(asked).toBe(0);
    });
  });

  it("a per-item failure fails only that item; a thrown batch fails all of its items", async () => {
    const gc = new GroupCommit<number, number>({ maxBatch: 3, maxWaitMs: 5 }, async (_k, items) => {
      if (items.includes(99)) throw new Error("boom");
      return items.map((x): ItemResult<number> => (x < 0 ? { ok: false, error: new Error(`neg ${x}`) } : { ok: true, value: x }));
    });
    const r = await Promise.allSettled([gc.submit("r", 1), gc.submit("r", -2), gc.submit("r", 3)]);
    expect(r.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const all = await Promise.allSettled([gc.submit("r", 99), gc.submit("r", 4)]);
    expect(all.every((x) => x.status === "rejected")).toBe(true);
  });
});

function fakeResult(names: string[], present: Set<string>): SpaceAddResult {
  const added = names.filter((n) => !present.has(n));
  for (const n of added) present.add(n);
  return { outcome: added.length ? "committed" : "noop", generation: present.size, spaces: [...present], added, removed: [], attempts: 1, conflicts: 0, reloads: added.length ? 1 : 0, requested: names, provisioned: [] };
}

describe("space-add batch runner (fake saga)", () => {
  it("one saga call per batch; each job learns added vs already-present; duplicates collapse", async () => {
    const present = new Set(["old"]);
    const calls: string[][] = [];
    const run = spaceAddBatchRunner({
      root: "/r",
      lockWaitMs: 1,
      add: async (o: SpaceAddOptions) => {
        calls.push(o.names);
        return fakeResult(o.names, present);
      },
    });
    const res = await run("k", [
      { name: "a", jobId: "1a" },
      { name: "old", jobId: "1b" },
      { name: "a", jobId: "1c" },
    ]);
    expect(calls).toEqual([["a", "old"]]);
    expect(res.map((r) => (r.ok ? r.value.outcome : "err"))).toEqual(["added", "already-present", "added"]);
  });

  it("the queued saga reads its decision under the lock and frees the lane at its commit", async () => {
    const seen: SpaceAddOptions[] = [];
    let freed = 0;
    const run = spaceAddBatchRunner({
      root: "/r",
      lockWaitMs: 1,
      add: async (o: SpaceAddOptions) => {
        seen.push(o);
        const r = fakeResult(o.names, new Set());
        o.onCommitted?.(r);
        return r;
      },
    });
    await run("k", [{ name: "a", jobId: "1" }], () => freed++);
    expect(seen[0]?.decideUnderLock).toBe(true);
    expect(freed).toBe(1);
  });

  it("a permanent refusal is retried name by name so only the offender fails; a busy refusal fails all (retried by BullMQ)", async () => {
    const present = new Set<string>();
    const calls: string[][] = [];
    const run = spaceAddBatchRunner({
      root: "/r",
      lockWaitMs: 1,
      add: async (o: SpaceAddOptions) => {
        calls.push(o.names);
        if (o.names.includes("foreign")) throw new CotalError("foreign-operator", "signed by another operator");
        if (o.names.includes("busy")) throw new CotalError("rolled-back", "a crashed claim was rolled back");
        return fakeResult(o.names, present);
      },
    });
    const res = await run("k", [
      { name: "a", jobId: "a" },
      { name: "foreign", jobId: "f" },
      { name: "b", jobId: "b" },
    ]);
    expect(res.map((r) => r.ok)).toEqual([true, false, true]);
    const bad = res[1] as { ok: false; error: Error };
    expect(bad.error.name).toBe("UnrecoverableError");
    expect(bad.error.message).toMatch(/^\[foreign-operator\]/);
    expect(calls).toEqual([["a", "foreign", "b"], ["a"], ["foreign"], ["b"]]);

    const busy = await run("k", [
      { name: "c", jobId: "c" },
      { name: "busy", jobId: "x" },
    ]);
    expect(busy.every((r) => !r.ok && (r.error as Error).name !== "UnrecoverableError" && /\[rolled-back\]/.test((r.error as Error).message))).toBe(true);
  });
});
