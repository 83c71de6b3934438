import { describe, expect, it } from "vitest";
import { compressNames, summariseNames } from "../src/batch-summary.js";

const range = (prefix: string, from: number, to: number, width = 4) => Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${String(from + i).padStart(width, "0")}`);

describe("batch summary", () => {
  it("a thousand names become a count and one range", () => {
    expect(summariseNames(range("t", 1, 1000))).toBe("1000 spaces: t0001..t1000");
  });

  it("a few names are listed as they are, in their order", () => {
    expect(summariseNames(["beta", "alpha"])).toBe("beta, alpha");
    expect(summariseNames(["t1", "t2", "t3"])).toBe("t1, t2, t3");
  });

  it("compresses runs per prefix and width, keeps gaps and odd names", () => {
    const names = [...range("t", 1, 10), ...range("t", 12, 20), "alpha", "b1", "b2", ...range("x", 7, 9, 1)];
    expect(compressNames(names)).toBe("alpha, b1, b2, t0001..t0010, t0012..t0020, x7..x9");
    expect(compressNames(["t11", "t9", "t10"])).toBe("t9, t10, t11");
  });

  it("names of different widths never join one run", () => {
    expect(compressNames(["t8", "t9", "t10", "t11", "t12"])).toBe("t8, t9, t10..t12");
  });

  it("past the part limit the rest is counted and --json named", () => {
    const scattered = Array.from({ length: 20 }, (_, i) => `s${i * 10}`);
    const text = compressNames(scattered, 4);
    expect(text.split(", ").slice(0, 4)).toEqual(["s0", "s10", "s20", "s30"]);
    expect(text).toMatch(/… and 16 more runs \(--json lists every name\)$/);
  });

  it("duplicates count once", () => {
    expect(compressNames(["a1", "a1", "a2", "a3"])).toBe("a1..a3");
  });
});
