import { defineConfig } from "vitest/config";
import { sharedTestConfig } from "../vitest.shared.ts";

// Live suites start real nats-servers; two cores, so at most two files at once.
export default defineConfig(
  sharedTestConfig("live", { include: ["suites/**/*.test.ts"], testTimeout: 90_000, hookTimeout: 60_000, maxWorkers: 2, globalSetup: ["./global-setup.ts"] }),
);
