import { describe, expect, it } from "vitest";
import { fdBudget, fdHeadroom, fdsPerTenant, parseFdLimits } from "../src/broker/fd-budget.js";
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
