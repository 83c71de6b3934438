import { defineConfig } from "vitest/config";

// The unit suites that exercise the pure safety core, run from the repo root by Stryker
// (stryker.config.mjs); `pnpm test` keeps running each package's own config.
export default defineConfig({
  test: {
    include: [
      "packages/saga/test/**/*.test.ts",
      "packages/cli/test/**/*.test.ts",
    ],
    testTimeout: 30_000,
  },
});
