import { describe, expect, it } from "vitest";
import { assertSpaceName, isCotalError, spaceFromHex, spaceHex } from "../src/internal.js";

const INVALID = ["", "a".repeat(65), "Alpha", "a b", "../x", "x}", "a\nb", "café", "-lead", "_lead", "a.b", "a/b", "a*", "a>", "ａ"];
const VALID = ["a", "0", "default", "team-a", "tenant_42", "a".repeat(64), "9lives"];

describe("space names", () => {
  it.each(INVALID)("refuses %j with the rule in the message", (name) => {
    try {
      assertSpaceName(name);
      expect.unreachable();
    } catch (e) {
      expect(isCotalError(e, "invalid-space-name")).toBe(true);
      expect((e as Error).message).toContain("[a-z0-9_-]");
    }
  });

  it.each(VALID)("accepts %j", (name) => {
    expect(assertSpaceName(name)).toBe(name);
  });

  it("hex segments round-trip and never contain a path separator", () => {
    for (const n of VALID) {
      const hex = spaceHex(n);
      expect(hex).toMatch(/^[0-9a-f]+$/);
      expect(spaceFromHex(hex)).toBe(n);
    }
    expect(spaceFromHex("zz")).toBeUndefined();
    expect(spaceFromHex("abc")).toBeUndefined();
  });
});
