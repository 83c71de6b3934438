import { describe, expect, it } from "vitest";
import { assertSpaceName, isCotalError, CotalError, spaceFromHex, spaceHex, spaceToken, SPACE_NAME_RULE } from "../src/internal.js";
import { guardsFromEnv } from "../src/guards.js";

function refusal(name: unknown): CotalError {
  try {
    assertSpaceName(name as string);
  } catch (e) {
    if (isCotalError(e, "invalid-space-name")) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(name)} to be refused`);
}

describe("space-name refusal", () => {
  it("names the offending value, the rule and a runnable way out", () => {
    const e = refusal("Bad Name");
    expect(e.message).toBe(`invalid space name "Bad Name": a space name is ${SPACE_NAME_RULE}`);
    expect(e.details).toEqual({ name: "Bad Name", rule: SPACE_NAME_RULE });
    expect(e.next).toBe("choose a name like `team-a` or `tenant_42`");
  });

  it("refuses a non-string with the same typed error instead of a TypeError", () => {
    for (const v of [42, null, undefined, ["a"]]) expect(refusal(v).code).toBe("invalid-space-name");
  });
});

describe("hex segments", () => {
  it("hex-encodes the UTF-8 bytes", () => {
    expect(spaceHex("ab")).toBe("6162");
    expect(spaceHex("é")).toBe("c3a9");
  });

  it("decodes only canonical lowercase hex of valid UTF-8", () => {
    expect(spaceFromHex("6162")).toBe("ab");
    expect(spaceFromHex("c3a9")).toBe("é");
    expect(spaceFromHex("ff")).toBeUndefined(); // not UTF-8: would decode to U+FFFD
    expect(spaceFromHex("6162G")).toBeUndefined();
    expect(spaceFromHex("x6162")).toBeUndefined();
    expect(spaceFromHex("6162x")).toBeUndefined();
    expect(spaceFromHex("616")).toBeUndefined();
    expect(spaceFromHex("")).toBeUndefined();
  });

  it("the stream/bucket token of a space is its name", () => {
    expect(spaceToken("team-a")).toBe("team-a");
  });
});

describe("the SKIP_NAME_VALIDATION test-only switch", () => {
  it("disables exactly the name rule, and only when set to 1", () => {
    const name = "Not/A/Name";
    expect(() => assertSpaceName(name)).toThrow(/invalid space name/);
    expect(assertSpaceName(name, guardsFromEnv({ COTAL_TEST_UNSAFE_SKIP_NAME_VALIDATION: "1" }))).toBe(name);
    expect(() => assertSpaceName(name, guardsFromEnv({ COTAL_TEST_UNSAFE_SKIP_NAME_VALIDATION: "true" }))).toThrow(/invalid space name/);
  });
});
