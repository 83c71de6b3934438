import { disposeAllBrokers } from "./backend.js";
import { cleanupTempRoots } from "./tempdir.js";

/**
 * For a suite's afterAll: disposes every broker still alive and removes every temp root this
 * process made. Cleanup runs even if a dispose fails; the failure is rethrown afterwards.
 */
export async function harnessTeardown(): Promise<void> {
  try {
    await disposeAllBrokers();
  } finally {
    await cleanupTempRoots();
  }
}
