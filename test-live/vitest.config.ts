import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../vitest.shared.ts";

// Live suites start real nats-servers; two cores, so two files at once (three saved CI 9-13 % and
// slowed a cluster partition cell's leader election past its writer's lease check: docs/ci.md). The matrix needs a
// credential-poll rate (≥ 1,000 attempts/s; a sparser run is re-run, docs/saga.md): beside another
// suite's servers and pollers (the cluster suite runs three of each) a 2-core machine cannot give it
// that, so CI runs it alone after the rest (COTAL_LIVE_PART=rest, then =timed; infra/test.sh).
// Unset, `pnpm test:live` runs every file.
const TIMED = ["suites/matrix.test.ts"];
const part = process.env.COTAL_LIVE_PART;
const base = { testTimeout: 90_000, hookTimeout: 60_000, globalSetup: ["./global-setup.ts"] };

export default defineConfig(
  part === "timed"
    ? sharedTestConfig("live-timed", { ...base, include: TIMED, maxWorkers: 1 })
    : sharedTestConfig("live", { ...base, include: ["suites/**/*.test.ts"], exclude: part === "rest" ? TIMED : [], maxWorkers: 2 }),
);
