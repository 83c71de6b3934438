import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FAILPOINTS } from "../src/failpoints.js";
import { SAGA_STEPS, SAGA_TIMINGS } from "../src/saga/steps.js";

// docs/saga.md "The steps" is the one description of the saga's steps: its table names every
// failpoint of SAGA_STEPS and every timing of SAGA_TIMINGS, in the order the saga reaches them.
const doc = readFileSync(new URL("../../../docs/saga.md", import.meta.url), "utf8");
const section = doc.slice(doc.indexOf("## The steps"), doc.indexOf("\n## ", doc.indexOf("## The steps") + 1));
const rows = section.split("\n").filter((l) => /^\| (\d+ )?\| [a-z]/.test(l)).map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
const names = (cell: string | undefined): string[] => [...(cell ?? "").matchAll(/`([a-z-]+)`/g)].map((m) => m[1] as string);

describe("docs/saga.md, the steps", () => {
  it("has a row per step, read to release", () => {
    expect(rows.map((r) => r[1])).toEqual(["read", "lease", "re-read", "resume, decide", "claim", "materialise", "stage", "fence", "prove", "commit", "release"]);
  });

  it("names every SAGA_STEPS failpoint, in order, and each is a known failpoint", () => {
    expect(rows.flatMap((r) => names(r[3]))).toEqual([...SAGA_STEPS]);
    for (const step of SAGA_STEPS) expect(FAILPOINTS).toContain(step);
  });

  it("names every SAGA_TIMINGS timing, in order", () => {
    expect(rows.flatMap((r) => names(r[4]))).toEqual([...SAGA_TIMINGS]);
  });
});
