import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GUARD_SWITCHES, GUARDS_ON, guardsFromEnv, sagaLimitsFromEnv } from "../src/guards.js";

const repo = new URL("../../../", import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, repo), "utf8");

/** Every .ts file under a directory, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("the guards (docs/ablation.md)", () => {
  it("GUARDS_ON switches nothing off", () => {
    expect(GUARD_SWITCHES.length).toBeGreaterThan(0);
    for (const name of GUARD_SWITCHES) expect(GUARDS_ON[name], name).toBe(false);
  });

  it("an entry turns off exactly the switches its environment sets to 1", () => {
    expect(guardsFromEnv({})).toBe(GUARDS_ON);
    const g = guardsFromEnv({ COTAL_TEST_UNSAFE_DISABLE_CAS: "1", COTAL_TEST_UNSAFE_SKIP_LOCK: "true", COTAL_TEST_UNSAFE_NOT_A_SWITCH: "1" });
    expect(GUARD_SWITCHES.filter((name) => g[name])).toEqual(["DISABLE_CAS"]);
  });

  it("every switch the ablation table and script name is a key of Guards", () => {
    const known = new Set<string>(GUARD_SWITCHES);
    const table = [...read("docs/ablation.md").matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1] as string);
    const rows = [...read("scripts/ablate.sh").matchAll(/^ {2}"([A-Z_]+)\|/gm)].map((m) => m[1] as string);
    expect(table.length).toBeGreaterThan(0);
    expect(rows.length).toBeGreaterThan(0);
    expect([...table, ...rows].filter((name) => !known.has(name))).toEqual([]);
  });

  it("the core never reads a guard from the environment: only guards.ts names COTAL_TEST_UNSAFE_", () => {
    const src = new URL("../src/", import.meta.url).pathname;
    const readers = sources(src).filter((f) => !f.endsWith("/guards.ts") && readFileSync(f, "utf8").includes("COTAL_TEST_UNSAFE_"));
    expect(readers).toEqual([]);
  });
});

describe("the saga limits an entry hands in", () => {
  it("takes whole numbers only, at least 1 attempt", () => {
    expect(sagaLimitsFromEnv({})).toEqual({});
    expect(sagaLimitsFromEnv({ COTAL_SAGA_MAX_ATTEMPTS: "1", COTAL_LEASE_WAIT_MS: "0" })).toEqual({ maxAttempts: 1, leaseWaitMs: 0 });
    expect(sagaLimitsFromEnv({ COTAL_SAGA_MAX_ATTEMPTS: "0", COTAL_LEASE_WAIT_MS: "1.5" })).toEqual({});
  });
});
