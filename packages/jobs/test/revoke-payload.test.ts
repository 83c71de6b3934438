import { describe, expect, it } from "vitest";
import { isCotalError } from "@cotal/core/errors";
import { jobIdFor, parsePayload } from "../src/index.js";
import { jobIdSuffix } from "../src/enqueue.js";

// The space-revoke job (issue 33): the same selector rules as the CLI, and an id that names what it revokes.
const KEY = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4";

function refusal(data: unknown): string {
  try {
    parsePayload("space-revoke", data);
  } catch (e) {
    expect(isCotalError(e, "invalid-payload")).toBe(true);
    return (e as Error).message;
  }
  throw new Error("accepted");
}

describe("space-revoke payload", () => {
  it("takes a user or a key, a before in unix seconds, force with a key", () => {
    expect(parsePayload("space-revoke", { root: "/r", name: "alpha", user: "app" })).toEqual({ root: "/r", name: "alpha", user: "app" });
    expect(parsePayload("space-revoke", { root: "/r", name: "alpha", key: KEY, before: 1_700_000_000, force: true }).key).toBe(KEY);
  });

  it.each([
    ["neither user nor key", { root: "/r", name: "alpha" }, /exactly one of user and key/],
    ["both", { root: "/r", name: "alpha", user: "app", key: KEY }, /exactly one of user and key/],
    ["a malformed key", { root: "/r", name: "alpha", key: "UBAD" }, /user public key/],
    ["a fractional before", { root: "/r", name: "alpha", user: "app", before: 1.5 }, /before/],
    ["force without a key", { root: "/r", name: "alpha", user: "app", force: true }, /force goes with key only/],
  ])("refuses %s", (_what, data, message) => {
    expect(refusal(data)).toMatch(message);
  });

  it("a job id per space and selector: a repeat is the same job, another user another", () => {
    const id = (p: object) => jobIdFor("space-revoke", "rk", "alpha", jobIdSuffix(p));
    expect(id({ user: "app" })).toBe("space-revoke.rk.alpha.user-app");
    expect(id({ key: KEY, before: 1_700_000_000 })).toBe(`space-revoke.rk.alpha.key-${KEY}.before-1700000000`);
    expect(id({ user: "app" })).not.toBe(id({ user: "app2" }));
    expect(jobIdSuffix({ name: "alpha" })).toBeUndefined(); // every other job type keeps its id
  });
});
