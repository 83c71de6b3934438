import { join } from "node:path";
import type { ViteUserConfig } from "vitest/config";

/** Every suite writes a JSON report when COTAL_TEST_REPORT_DIR is set, so one line can sum them. */
export function sharedTestConfig(name: string, overrides: ViteUserConfig["test"] = {}): ViteUserConfig {
  const dir = process.env.COTAL_TEST_REPORT_DIR;
  return {
    test: {
      include: ["test/**/*.test.ts"],
      testTimeout: 30_000,
      ...(dir ? { reporters: ["default", "json"], outputFile: { json: join(dir, `${name}.json`) } } : {}),
      ...overrides,
    },
  };
}
