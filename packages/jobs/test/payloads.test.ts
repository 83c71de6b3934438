import { describe, expect, it } from "vitest";
import { parsePayload, PAYLOADS, JOB_TYPES } from "../src/index.js";
import { isCotalError } from "@cotal/core/errors";

describe("job payloads (zod)", () => {
  it("accepts a well-formed payload of every type", () => {
    expect(parsePayload("space-add", { root: "/srv/cotal", name: "team-a" })).toEqual({ root: "/srv/cotal", name: "team-a" });
    expect(parsePayload("space-rm", { root: "/srv/cotal", name: "t_42" }).name).toBe("t_42");
    expect(parsePayload("space-backup", { root: "/r", name: "a", out: "/b", keep: 3 }).keep).toBe(3);
    expect(parsePayload("space-restore", { root: "/r", name: "a", from: "/b/x" }).from).toBe("/b/x");
    expect(Object.keys(PAYLOADS).sort()).toEqual([...JOB_TYPES].sort());
  });

  it("a restore's replace travels only with its confirmation", () => {
    expect(parsePayload("space-restore", { root: "/r", name: "a", from: "/b/x", replace: true, yes: true })).toMatchObject({ replace: true, yes: true });
    let caught: unknown;
    try {
      parsePayload("space-restore", { root: "/r", name: "a", from: "/b/x", replace: true });
    } catch (e) {
      caught = e;
    }
    expect(isCotalError(caught, "invalid-payload")).toBe(true);
    expect((caught as Error).message).toMatch(/yes: replace deletes/);
  });

  it.each([
    ["bad name", { root: "/r", name: "Bad Name" }],
    ["leading dash", { root: "/r", name: "-a" }],
    ["too long", { root: "/r", name: "a".repeat(65) }],
    ["relative root", { root: "rel/root", name: "a" }],
    ["unknown field", { root: "/r", name: "a", extra: 1 }],
    ["missing name", { root: "/r" }],
    ["not an object", "space-add a"],
  ])("refuses %s as a typed invalid-payload", (_what, data) => {
    let caught: unknown;
    try {
      parsePayload("space-add", data);
    } catch (e) {
      caught = e;
    }
    expect(isCotalError(caught, "invalid-payload")).toBe(true);
  });

  it("backup needs an output directory and a positive keep", () => {
    expect(() => parsePayload("space-backup", { root: "/r", name: "a", out: "" })).toThrow(/out/);
    expect(() => parsePayload("space-backup", { root: "/r", name: "a", out: "/o", keep: 0 })).toThrow(/keep/);
  });
});
