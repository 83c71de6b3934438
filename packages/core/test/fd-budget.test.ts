import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { awaitFdBudget, countBlockFds, fdBudget, fdHeadroom, fdsPerTenant, idleCloseCouldFit, parseFdLimits } from "../src/broker/fd-budget.js";
import { CotalError } from "../src/errors.js";
import { parseServerVersion } from "../src/broker/server-features.js";

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe("fd budget", () => {
  it("reads the soft and hard open-file limits from /proc/<pid>/limits", () => {
    expect(parseFdLimits(LIMITS)).toEqual({ soft: 1024, hard: 524288 });
    expect(parseFdLimits(LIMITS.replace("1024                 524288", "unlimited            unlimited"))).toEqual({ soft: Infinity, hard: Infinity });
    expect(parseFdLimits("Max cpu time unlimited unlimited seconds\n")).toBeUndefined();
    expect(parseFdLimits("Max open files  lots  many files\n")).toBeUndefined();
  });

  it("charges the measured descriptors per tenant by server version", () => {
    expect(fdsPerTenant(parseServerVersion("2.9.10"))).toBe(6);
    expect(fdsPerTenant(parseServerVersion("2.14.10"))).toBe(3);
    expect(fdsPerTenant(parseServerVersion("2.10.0-RC.1"))).toBe(6); // a pre-release earns no gate
    expect(fdsPerTenant(undefined)).toBe(6);
  });

  it("fits a batch under the limit with headroom, and refuses one past it", () => {
    expect(fdHeadroom(1000)).toBe(256);
    expect(fdHeadroom(20_000)).toBe(1000);
    // 20,000 fds on 2.9.10 with 4,000 tenants (6 each) open: 2,499 more fit, 2,500 do not.
    const open = 19 + 4000 * 6;
    expect(fdBudget({ limit: 30_000, open, adds: 600, perTenant: 6 }).fits).toBe(true);
    const over = fdBudget({ limit: 20_000, open: 15_019, adds: 1000, perTenant: 6 });
    expect(over).toMatchObject({ fits: false, needed: 15_019 + 6000 + 1000, headroom: 1000, room: 663 });
    const edge = fdBudget({ limit: 20_000, open: 15_019, adds: 663, perTenant: 6 });
    expect(edge.fits).toBe(true);
    expect(fdBudget({ limit: 20_000, open: 15_019, adds: 664, perTenant: 6 }).fits).toBe(false);
    expect(fdBudget({ limit: 100, open: 200, adds: 1, perTenant: 3 })).toMatchObject({ fits: false, room: 0 });
    expect(fdBudget({ limit: Infinity, open: 1e6, adds: 1e5, perTenant: 6 }).fits).toBe(true);
  });
});

/** A broker whose open count at each poll is the next of `open` (then the last), `blocks` of them block files. */
function fakeBroker(open: number[], blocks: number, soft = 20_000) {
  let t = 0;
  let i = 0;
  let blockReads = 0;
  const notices: string[] = [];
  return {
    notices,
    polls: () => i,
    blockReads: () => blockReads,
    opts: {
      read: () => ({ soft, hard: soft, open: open[Math.min(i++, open.length - 1)] as number }),
      blocks: () => {
        blockReads++;
        return blocks;
      },
      now: () => t,
      sleep: async (ms: number) => {
        t += ms;
      },
      onNotice: (m: string) => notices.push(m),
      waitMs: 10_000,
    },
  };
}

const v214 = parseServerVersion("2.14.10");

describe("fd budget: the wait for idle block files", () => {
  it("could fit only when the batch fits once every block file closed", () => {
    const b = fdBudget({ limit: 20_000, open: 17_515, adds: 1000, perTenant: 3 });
    expect(b.fits).toBe(false); // needs 21,515
    expect(idleCloseCouldFit(b, 1515)).toBe(true);
    expect(idleCloseCouldFit(b, 1514)).toBe(false);
  });

  it("a batch that fits at once does not wait", async () => {
    const f = fakeBroker([1000], 900);
    expect((await awaitFdBudget(1, v214, 1000, "cotal space add x", f.opts))?.fits).toBe(true);
    expect(f.polls()).toBe(1);
    expect(f.blockReads()).toBe(0); // a batch that fits reads no fd's target
    expect(f.notices).toEqual([]);
  });

  it("waits while the broker closes idle block files, tells once, and goes on when the batch fits", async () => {
    const f = fakeBroker([17_515, 17_000, 16_500, 15_900], 15_000);
    const b = await awaitFdBudget(1, v214, 1000, "cotal space add x", f.opts);
    expect(b).toMatchObject({ fits: true, open: 15_900 });
    expect(f.polls()).toBe(4);
    expect(f.notices).toHaveLength(1);
    expect(f.notices[0]).toContain("waiting up to 10 s");
  });

  it("refuses fd-budget after the bound when the files stay open, saying it waited", async () => {
    const f = fakeBroker([17_515], 15_000);
    const err = await awaitFdBudget(1, v214, 1000, "cotal space add x", f.opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CotalError);
    expect((err as CotalError).code).toBe("fd-budget");
    expect((err as CotalError).message).toContain("after waiting 10 s");
    expect((err as CotalError).details).toMatchObject({ waitedMs: 10_000, open: 17_515 });
    expect(f.polls()).toBe(11);
  });

  it("refuses at once, without waiting, a batch no idle close could fit", async () => {
    const f = fakeBroker([17_515], 100);
    const err = await awaitFdBudget(1, v214, 1000, "cotal space add x", f.opts).catch((e: unknown) => e);
    expect((err as CotalError).code).toBe("fd-budget");
    expect((err as CotalError).message).not.toContain("after waiting");
    expect(f.polls()).toBe(1);
    expect(f.notices).toEqual([]);
  });

  it("counts a process's open message-block files (.blk, 2.9's .idx), not its other files", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-fds-"));
    mkdirSync(join(dir, "msgs"));
    const before = countBlockFds(process.pid) ?? -1;
    const fds = ["msgs/1.blk", "msgs/1.idx", "msgs/index.db", "meta.inf"].map((f) => openSync(join(dir, f), "w"));
    try {
      expect(countBlockFds(process.pid)).toBe(before + 2);
    } finally {
      for (const fd of fds) closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    }
    expect(countBlockFds(2 ** 22 + 7)).toBeUndefined(); // no such pid
  });
});
