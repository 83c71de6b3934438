import { defineConfig } from "vitest/config";

// The unit suites that exercise the pure safety core, run from the repo root by Stryker
// (stryker.config.mjs); `pnpm test` keeps running each package's own config.
export default defineConfig({
  test: {
    include: [
      "packages/core/test/**/*.test.ts",
      "packages/cli/test/**/*.test.ts",
    ],
    // It spawns real processes and sets the umask, which Stryker's worker threads forbid; it covers
    // the process plumbing, none of the mutated files.
    // bundle.test.ts reads the build's output (dist/bundle/), none of the mutated sources.
    exclude: ["packages/core/test/server-process.test.ts", "packages/cli/test/bundle.test.ts", "**/node_modules/**"],
    testTimeout: 30_000,
  },
});
