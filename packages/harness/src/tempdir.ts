import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempRoot {
  readonly path: string;
  /** Removes the directory tree; idempotent. Kept on disk when COTAL_HARNESS_KEEP=1. */
  cleanup(): Promise<void>;
}

const live = new Set<TempRoot>();

/** True when COTAL_HARNESS_KEEP=1: temp roots survive cleanup so a failed run can be inspected. */
export function keepTempRoots(): boolean {
  return process.env.COTAL_HARNESS_KEEP === "1";
}

/**
 * A fresh private directory under os.tmpdir(). Mode 0700 because cotal roots hold seeds and creds;
 * tracked so `cleanupTempRoots()` in a suite teardown removes whatever a failing test left.
 */
export async function tempRoot(prefix = "cotal-"): Promise<TempRoot> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  await chmod(path, 0o700);
  let removed = false;
  const root: TempRoot = {
    path,
    async cleanup() {
      live.delete(root);
      if (removed || keepTempRoots()) return;
      removed = true;
      // maxRetries covers a server still flushing its store while the tree is removed.
      await rm(path, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    },
  };
  live.add(root);
  return root;
}

/** Removes every temp root this process created and has not cleaned up yet. */
export async function cleanupTempRoots(): Promise<void> {
  await Promise.all([...live].map((r) => r.cleanup()));
}
