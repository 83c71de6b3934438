import { readdirSync, readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../vitest.shared.ts";
import { LIVE_TAGS } from "./fixtures/tags.ts";

// Live suites start real nats-servers; two cores, so two files at once (three saved CI 9-13 % and
// slowed a cluster partition cell's leader election past its writer's lease check: docs/ci.md). The matrix needs a
// credential-poll rate (≥ 1,000 attempts/s; a sparser run is re-run, docs/saga.md): beside another
// suite's servers and pollers (the cluster suite runs three of each) a 2-core machine cannot give it
// that, so CI runs it alone after the rest (COTAL_LIVE_PART=rest, then =timed; infra/test.sh).
// COTAL_LIVE_SCOPE=versioned keeps only the cells tagged `server-version` (fixtures/tags.ts; every matrix
// cell is): CI runs every cell on the default server and the versioned ones on every other supported
// server (docs/ci.md).
// Unset, `pnpm test:live` runs every file.
const TIMED = ["suites/matrix.test.ts"];
const part = process.env.COTAL_LIVE_PART;
const scope = process.env.COTAL_LIVE_SCOPE;
if (scope !== undefined && scope !== "all" && scope !== "versioned") throw new Error(`COTAL_LIVE_SCOPE must be all or versioned, not ${scope}`);
const base = {
  testTimeout: 90_000,
  hookTimeout: 60_000,
  globalSetup: ["./global-setup.ts"],
  tags: LIVE_TAGS,
};
const versioned = scope === "versioned" ? { tagsFilter: ["server-version"] } : {};
/**
 * In the versioned scope only the files that tag a cell are collected: every other file would be
 * imported (~1.7 s each, about 50 s a server in all) only to skip each of its cells (docs/ci.md).
 */
function taggedSuites(): string[] {
  const dir = new URL("./suites/", import.meta.url);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts") && /VERSION_DEPENDENT|"server-version"/.test(readFileSync(new URL(f, dir), "utf8")))
    .map((f) => `suites/${f}`);
}
const restFiles = scope === "versioned" ? taggedSuites() : ["suites/**/*.test.ts"];

export default defineConfig(
  part === "timed"
    ? sharedTestConfig("live-timed", { ...base, ...versioned, include: TIMED, maxWorkers: 1 })
    : sharedTestConfig("live", { ...base, ...versioned, include: restFiles, exclude: part === "rest" ? TIMED : [], maxWorkers: 2 }),
);
