import { describe, expect, it } from "vitest";
import { jobIdSuffix } from "../src/enqueue.js";
import { jobIdFor, JOB_TYPES, PROCESSED_TYPES } from "../src/names.js";
import { parsePayload } from "../src/payloads.js";

// The space-rotate-key job (issue 33): the CLI's flag rules (--keep-old or --finish, not both), and an id that names which.
describe("space-rotate-key payload", () => {
  it("takes a rotation, a --keep-old in seconds, or a --finish", () => {
    expect(parsePayload("space-rotate-key", { root: "/r", name: "alpha" })).toEqual({ root: "/r", name: "alpha" });
    expect(parsePayload("space-rotate-key", { root: "/r", name: "alpha", keepOld: 3600 }).keepOld).toBe(3600);
    expect(parsePayload("space-rotate-key", { root: "/r", name: "alpha", finish: true }).finish).toBe(true);
    expect(JOB_TYPES).toContain("space-rotate-key");
    expect(PROCESSED_TYPES).toContain("space-rotate-key");
  });

  it.each([
    [{ root: "/r", name: "alpha", keepOld: 60, finish: true }, /keepOld starts a rotation and finish ends one/],
    [{ root: "/r", name: "alpha", keepOld: 0 }, /keepOld/],
    [{ root: "/r", name: "alpha", keepOld: 1.5 }, /keepOld/],
    [{ root: "/r", name: "Bad Name" }, /name/],
    [{ root: "r", name: "alpha" }, /absolute/],
    [{ root: "/r", name: "alpha", user: "app" }, /user/],
  ])("refuses %j", (data, why) => {
    expect(() => parsePayload("space-rotate-key", data)).toThrow(expect.objectContaining({ code: "invalid-payload", message: expect.stringMatching(why) }));
  });

  it("its id names a --finish or a --keep-old, so each is its own job and a repeat the same one", () => {
    const id = (p: object) => jobIdFor("space-rotate-key", "rk", "alpha", jobIdSuffix(p));
    expect(id({})).toBe("space-rotate-key.rk.alpha");
    expect(id({ finish: true })).toBe("space-rotate-key.rk.alpha.finish");
    expect(id({ keepOld: 3600 })).toBe("space-rotate-key.rk.alpha.keep-old-3600");
  });
});
