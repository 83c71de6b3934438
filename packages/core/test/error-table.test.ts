import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI_ERROR_CODES, ERROR_TABLE, JOBS_ERROR_CODES, SAGA_ERROR_CODES, type ErrorCode } from "../src/internal.js";

const ALL: ErrorCode[] = [...SAGA_ERROR_CODES, ...JOBS_ERROR_CODES, ...CLI_ERROR_CODES];

// The README's exit-code table is the contract: every code sits in exactly one row.
const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
const start = readme.indexOf("## Exit codes");
const section = readme.slice(start, readme.indexOf("\n## ", start + 1));

/** code → documented exit, from the table rows and the job-layer sentence under it. */
function documented(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of section.matchAll(/^\| (\d) \| [^|]+ \| (.*) \|$/gm)) {
    for (const c of (m[2] ?? "").matchAll(/`([a-z-]+)`/g)) {
      expect(out.has(c[1] as string), `${c[1]} is documented once`).toBe(false);
      out.set(c[1] as string, Number(m[1]));
    }
  }
  for (const m of section.matchAll(/`([a-z-]+)` exits (\d)/g)) {
    expect(out.has(m[1] as string), `${m[1]} is documented once`).toBe(false);
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

describe("the error table", () => {
  it("has exactly one row per code the core, the jobs and the CLI declare", () => {
    expect(SAGA_ERROR_CODES.length).toBeGreaterThan(40);
    expect(new Set(ALL).size).toBe(ALL.length);
    expect(Object.keys(ERROR_TABLE).sort()).toEqual([...ALL].sort());
  });

  const table = documented();

  it("reads the README table (a parse that found nothing would pass everything below)", () => {
    expect(table.get("journal-blocked")).toBe(3);
    expect(table.get("redis-unreachable")).toBe(6);
    expect(table.size).toBe(ALL.length);
  });

  it.each(ALL)("%s exits with the number of its README row", (code) => {
    expect(table.get(code), `${code} is missing from the README exit-code table`).toBeDefined();
    expect(ERROR_TABLE[code].exit).toBe(table.get(code));
  });

  it("documents no code the table does not hold", () => {
    expect([...table.keys()].filter((c) => !(c in ERROR_TABLE))).toEqual([]);
  });

  it("marks exactly the transient codes retriable", () => {
    // Another writer or a crashed one's claim (it is rolled back or expires), a broker or Redis
    // that is restarting, a disk that fills or frees, a wait that ran out, and anything untyped.
    const transient: ErrorCode[] = [
      "lock-held",
      "lock-lost",
      "lease-held",
      "lease-lost",
      "conflict",
      "rolled-back",
      "broker-not-running",
      "broker-unreachable",
      "inventory-unreachable",
      "inventory-busy",
      "reload-unproven",
      "io",
      "redis-unreachable",
      "timeout",
      "internal",
    ];
    const retriable = ALL.filter((c) => ERROR_TABLE[c].retriable);
    expect(retriable.sort()).toEqual([...transient].sort());
  });

  it("every default next is a runnable line, not an empty or vague one", () => {
    for (const code of ALL) {
      const next = ERROR_TABLE[code].next;
      if (next !== undefined) expect(next, code).toMatch(/^(cotal [a-z-]|bash infra\/|\{rerun\}|COTAL_DEBUG=1 \{rerun\})/);
    }
    expect(ALL.filter((c) => ERROR_TABLE[c].next !== undefined).length).toBeGreaterThan(20);
  });

  it("gives the CLI's own codes a way out and their documented exits", () => {
    expect(ERROR_TABLE.usage).toEqual({ exit: 2, retriable: false, next: "cotal --help" });
    expect(ERROR_TABLE.internal.exit).toBe(1);
    expect(ERROR_TABLE.internal.next).toMatch(/COTAL_DEBUG=1/);
  });
});
