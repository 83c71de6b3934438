import { describe, expect, it } from "vitest";
import { parsePromText, promValue } from "../src/prom-text.js";

describe("strict Prometheus text parser (test helper)", () => {
  it("reads families, labels with escapes, histogram suffixes and special values", () => {
    const fams = parsePromText(
      [
        "# HELP a_total Things.",
        "# TYPE a_total counter",
        'a_total{k="x\\"y\\\\z\\n",j="2"} 5',
        "# TYPE h histogram",
        'h_bucket{le="1"} 1',
        'h_bucket{le="+Inf"} 2',
        "h_sum 3.5",
        "h_count 2",
        "# TYPE g gauge",
        "g NaN",
        "",
      ].join("\n"),
    );
    expect(fams.get("a_total")).toMatchObject({ type: "counter", help: "Things." });
    expect(promValue(fams, "a_total", { k: 'x"y\\z\n', j: "2" })).toBe(5);
    expect(promValue(fams, "h_bucket", { le: "+Inf" })).toBe(2);
    expect(promValue(fams, "h_sum")).toBe(3.5);
    expect(Number.isNaN(promValue(fams, "g"))).toBe(true);
    expect(promValue(fams, "a_total", { k: "other" })).toBeUndefined();
  });

  it.each([
    ["a sample of no declared family", "x 1"],
    ["a bad value", "# TYPE x gauge\nx one"],
    ["an unquoted label", "# TYPE x gauge\nx{a=1} 1"],
    ["an unknown type", "# TYPE x thing"],
    ["a stray comment", "# TYPE x gauge\n# hello"],
    ["a TYPE after samples", "# TYPE x gauge\nx 1\n# TYPE x counter"],
    ["a repeated label", '# TYPE x gauge\nx{a="1",a="2"} 1'],
  ])("rejects %s", (_what, text) => {
    expect(() => parsePromText(text)).toThrow(/line \d+/);
  });
});
