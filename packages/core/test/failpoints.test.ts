import { describe, expect, it } from "vitest";
import { failpoint, parseFailpoints, resetFailpoints } from "../src/internal.js";

describe("failpoints", () => {
  it("are inert when COTAL_FAILPOINT is unset", () => {
    expect(parseFailpoints(undefined).size).toBe(0);
    expect(parseFailpoints("").size).toBe(0);
  });

  it("parse every action kind", () => {
    const fp = parseFailpoints("after-claim:exit, before-rename:kill,up-locked:sleep:250,after-stage:throw,before-claim:barrier:/tmp/x:y:2");
    expect(fp.get("after-claim")).toEqual({ kind: "exit" });
    expect(fp.get("before-rename")).toEqual({ kind: "kill" });
    expect(fp.get("up-locked")).toEqual({ kind: "sleep", ms: 250 });
    expect(fp.get("after-stage")).toEqual({ kind: "throw" });
    expect(fp.get("before-claim")).toEqual({ kind: "barrier", dir: "/tmp/x:y", parties: 2 });
  });

  it("refuse malformed entries instead of silently ignoring them", () => {
    expect(() => parseFailpoints("nocolon")).toThrow(/COTAL_FAILPOINT/);
    expect(() => parseFailpoints("x:sleep:abc")).toThrow(/COTAL_FAILPOINT/);
    expect(() => parseFailpoints("after-claim:explode")).toThrow(/COTAL_FAILPOINT/);
  });

  it("refuse a step nobody arms: a typo is an error, never a cell that silently tests nothing", () => {
    expect(() => parseFailpoints("after-clam:exit")).toThrow(/unknown step "after-clam"/);
    expect(() => parseFailpoints("maintenance-started:kill")).not.toThrow();
  });

  it("`<step>#<n>` fires on the n-th visit only (a step reached once per cluster node)", async () => {
    expect(parseFailpoints("after-node-proof#2:kill").get("after-node-proof")).toEqual({ kind: "kill", nth: 2 });
    for (const bad of ["after-node-proof#0:kill", "after-node-proof#x:kill", "after-node-proof#2#3:kill"]) expect(() => parseFailpoints(bad)).toThrow(/COTAL_FAILPOINT/);
    process.env.COTAL_FAILPOINT = "after-node-proof#2:throw";
    resetFailpoints();
    try {
      await expect(failpoint("after-node-proof")).resolves.toBeUndefined();
      await expect(failpoint("after-node-proof")).rejects.toThrow(/failpoint after-node-proof/);
      await expect(failpoint("after-node-proof")).resolves.toBeUndefined();
    } finally {
      delete process.env.COTAL_FAILPOINT;
      resetFailpoints();
    }
  });
});
