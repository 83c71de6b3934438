// Mutation testing of the pure safety core (README "Mutation testing"): `pnpm test:mutation`.
// pnpm keeps the runner out of core's reach, so name the plugin by its resolved path.
const vitestRunner = import.meta.resolve("@stryker-mutator/vitest-runner");

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  plugins: [vitestRunner],
  vitest: { configFile: "vitest.mutation.config.ts", related: false },
  mutate: [
    "packages/core/src/inventory/record.ts",
    "packages/core/src/inventory/resume-decision.ts",
    "packages/core/src/inventory/lease.ts",
    "packages/core/src/render/*.ts",
    "packages/core/src/names.ts",
    "packages/core/src/journal/journal.ts",
    "packages/core/src/ops/derive-state.ts",
    "packages/core/src/broker/material-bucket.ts",
    "packages/core/src/inventory/node-proofs.ts",
    "packages/core/src/inventory/node-ask.ts",
    "packages/cli/src/exit-codes.ts",
  ],
  coverageAnalysis: "perTest",
  // vitest type-checks nothing, so no `// @ts-nocheck` is prepended to the sources (entries.test.ts reads each entry's first line).
  disableTypeChecks: false,
  // Incremental (README "Mutation testing"): the committed file holds the last run's results; Stryker
  // diffs the mutated files and the tests against it and re-tests every mutant either change could
  // affect. `pnpm test:mutation:full` (--force) tests every mutant again and rewrites it.
  incremental: true,
  incrementalFile: "stryker.incremental.json",
  reporters: ["clear-text", "progress", "json", "html"],
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  thresholds: { high: 95, low: 90, break: 90 },
  concurrency: 2,
  // The pinned nats-servers (infra/nats-server.sh) are tools, not sources: never copied into the sandbox.
  ignorePatterns: ["/.tools"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
