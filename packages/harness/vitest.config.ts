import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../../vitest.shared.ts";

// Shared settings (test/**/*.test.ts, 30 s per test, JSON report when COTAL_TEST_REPORT_DIR is set);
// hooks start and stop real servers, so they get the same 30 s.
export default defineConfig(sharedTestConfig("harness", { hookTimeout: 30_000 }));
