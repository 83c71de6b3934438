import { describe, expect, it } from "vitest";
import { parseFailpoints } from "../src/internal.js";

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
});
