import { describe, expect, it } from "vitest";
import { fdHeadroom, fdsPerProvisioner, provisionWidth } from "../src/broker/fd-budget.js";
import { hostname } from "node:os";
import { mapPaced } from "../src/pool.js";
import { provisionPacer } from "../src/provision/provision-batch.js";

describe("provisioning pace within the broker's open files", () => {
  it("keeps the full width while the steady files and half the headroom leave room", () => {
    // 2.9.10, 20,000 fds, 1,000 tenants open, a 1,000-space batch the budget let through.
    const input = { limit: 20_000, open: 6_019, unfinished: 1_000, perTenant: 6, max: 16 };
    expect(provisionWidth(input)).toBe(16);
    expect(provisionWidth({ ...input, limit: Number.POSITIVE_INFINITY })).toBe(16);
  });

  it("narrows to what is left after the owed tenants and the clients' reserve, one provisioner at a time", () => {
    const limit = 20_000;
    const reserve = Math.ceil(fdHeadroom(limit) / 2); // 500
    const per = fdsPerProvisioner(6); // 7
    expect(per).toBe(7);
    // spare = 20,000 - 500 - open - unfinished × 6; width = spare / 7
    const at = (spare: number, unfinished: number): number => provisionWidth({ limit, open: limit - reserve - unfinished * 6 - spare, unfinished, perTenant: 6, max: 16 });
    expect(at(7 * 5, 100)).toBe(5);
    expect(at(7 * 5 + 6, 100)).toBe(5);
    expect(at(7, 100)).toBe(1);
    expect(at(6, 100)).toBe(0);
    expect(at(-500, 100)).toBe(0);
    // The same open count frees up as tenants finish (their steady files were charged up front).
    const open = limit - reserve - 100 * 6;
    expect(provisionWidth({ limit, open, unfinished: 100, perTenant: 6, max: 16 })).toBe(0);
    expect(provisionWidth({ limit, open, unfinished: 90, perTenant: 6, max: 16 })).toBe(8);
    // 2.10+ keeps one file per stream: cheaper provisioners.
    expect(provisionWidth({ limit, open: limit - reserve - 40, unfinished: 0, perTenant: 3, max: 16 })).toBe(10);
  });

  it("a batch that passed the budget always gets headroom / 2 / per-provisioner slots", () => {
    for (const limit of [1_000, 4_096, 20_000, 65_536]) {
      const headroom = fdHeadroom(limit);
      const unfinished = 50;
      const open = limit - headroom - unfinished * 6; // exactly at the budget's edge
      expect(provisionWidth({ limit, open, unfinished, perTenant: 6, max: 1_000 })).toBe(Math.floor((headroom - Math.ceil(headroom / 2)) / 7));
    }
  });
});

describe("mapPaced", () => {
  const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 1));

  it("asks the width whenever a slot frees, never exceeds it, keeps one in flight at width 0, keeps the order", async () => {
    let inFlight = 0;
    let peak = 0;
    const peaks: number[] = [];
    const widths: number[] = [];
    const items = Array.from({ length: 40 }, (_, i) => i);
    const out = await mapPaced(
      items,
      ({ unfinished }) => {
        const w = unfinished > 30 ? 4 : unfinished > 10 ? 2 : 0;
        widths.push(w);
        return w;
      },
      async (i) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        peaks.push(inFlight);
        await tick();
        inFlight--;
        return i * 2;
      },
    );
    expect(out).toEqual(items.map((i) => i * 2));
    expect(peak).toBe(4);
    expect(widths).toContain(0);
    // Once the width fell to 0 only one ran at a time (the last 10 items).
    expect(peaks.slice(-9).every((p) => p === 1)).toBe(true);
  });

  it("starts nothing after the first failure, lets the ones in flight settle, then rejects with it", async () => {
    const started: number[] = [];
    const settled: number[] = [];
    const err = new Error("item 3 failed");
    const p = mapPaced(Array.from({ length: 20 }, (_, i) => i), () => 4, async (i) => {
      started.push(i);
      await tick();
      settled.push(i);
      if (i === 3) throw err;
      return i;
    });
    await expect(p).rejects.toBe(err);
    expect(started.length).toBeLessThan(20);
    expect([...settled].sort((a, b) => a - b)).toEqual([...started].sort((a, b) => a - b));
  });

  it("resolves an empty list at once", async () => {
    await expect(mapPaced([], () => 0, async () => 1)).resolves.toEqual([]);
  });
});

describe("provisionPacer", () => {
  it("reads the local process's open files and limit: full width with room, none when the owed files would not fit", () => {
    // This test process stands in for the broker: /proc/<pid>/limits and /proc/<pid>/fd are real.
    const pace = provisionPacer({ owner: { pid: process.pid, host: hostname() }, serverVersion: "2.14.10" });
    expect(pace({ unfinished: 0 })).toBe(16);
    const fresh = provisionPacer({ owner: { pid: process.pid, host: hostname() }, serverVersion: "2.14.10" });
    expect(fresh({ unfinished: 100_000_000 })).toBe(0);
  });

  it("keeps the plain bound for a broker on another host (its /proc is not ours)", () => {
    const pace = provisionPacer({ owner: { pid: process.pid, host: `${hostname()}-elsewhere` }, serverVersion: "2.9.10" });
    expect(pace({ unfinished: 100_000_000 })).toBe(16);
  });
});
