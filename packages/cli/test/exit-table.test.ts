import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { JobsErrorCode } from "@cotal/jobs/errors";
import { SAGA_ERROR_CODES } from "@cotal/saga";
import { exitCodeFor, exitCodeForJobs } from "../src/exit-codes.js";

// The README's exit-code table is the contract: every code the core can raise sits in exactly one
// row, and the CLI exits with that row's number for it.
const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
const section = readme.slice(readme.indexOf("## Exit codes"), readme.indexOf("\n## ", readme.indexOf("## Exit codes") + 1));

/** code → documented exit, from the table rows and the job-layer sentence under it. */
function documented(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of section.matchAll(/^\| (\d) \| [^|]+ \| (.*) \|$/gm)) {
    for (const c of (m[2] ?? "").matchAll(/`([a-z-]+)`/g)) {
      expect(out.has(c[1] as string), `${c[1]} is documented once`).toBe(false);
      out.set(c[1] as string, Number(m[1]));
    }
  }
  for (const m of section.matchAll(/`([a-z-]+)` exits (\d)/g)) out.set(m[1] as string, Number(m[2]));
  return out;
}

/** The members of a string-literal union type, read from its declaration. */
function unionMembers(file: URL, typeName: string): string[] {
  const text = readFileSync(file, "utf8");
  const lines = text.slice(text.indexOf(`export type ${typeName} =`)).split("\n");
  const members: string[] = [];
  for (const line of lines) {
    const code = line.replace(/\/\/.*$/, "").trim(); // comments may hold a ";"
    for (const m of code.matchAll(/\| "([a-z-]+)"/g)) members.push(m[1] as string);
    if (code.endsWith(";")) break;
  }
  return members;
}

const sagaCodes = [...SAGA_ERROR_CODES];
const jobsCodes = unionMembers(new URL("../../jobs/src/errors.ts", import.meta.url), "JobsErrorCode") as JobsErrorCode[];

describe("the README exit-code table", () => {
  const table = documented();

  it("reads the codes the core declares", () => {
    expect(sagaCodes.length).toBeGreaterThan(40);
    expect(sagaCodes).toContain("journal-blocked");
    expect(jobsCodes).toEqual(["redis-unreachable", "invalid-payload", "timeout", "job-failed", "job-lost"]);
  });

  it.each(sagaCodes)("%s exits with the number of its README row", (code) => {
    expect(table.get(code), `${code} is missing from the README exit-code table`).toBeDefined();
    expect(exitCodeFor(code)).toBe(table.get(code));
  });

  it.each(jobsCodes)("job code %s exits with its documented number", (code) => {
    expect(table.get(code), `${code} is missing from the README`).toBeDefined();
    expect(exitCodeForJobs(code)).toBe(table.get(code));
  });

  it("documents no code that does not exist (the CLI's own: usage 2, internal 1)", () => {
    const known = new Set<string>([...sagaCodes, ...jobsCodes]);
    const extra = [...table.keys()].filter((c) => !known.has(c));
    expect(extra.sort()).toEqual(["internal", "usage"]);
    expect([table.get("internal"), table.get("usage")]).toEqual([1, 2]);
  });
});
