import { readdirSync, rmSync, existsSync } from "node:fs";
import { join } from "node:path";
import { brokerState, down, RootLayout, SagaError, spaceBackup, spaceRestore, up, type SpaceRestoreResult } from "@cotal/saga";
import type { SpaceBackupPayload, SpaceRestorePayload } from "./payloads.js";

export const DEFAULT_KEEP = 7;

export interface ScheduledBackupResult {
  space: string;
  artifact: string;
  bytes: number;
  kept: string[];
  pruned: string[];
}

/** Complete artifacts of `space` under `dir` (a manifest marks completion), oldest first. */
export function completeArtifacts(dir: string, space: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const prefix = `${space}-`;
  return names
    .filter((n) => n.startsWith(prefix) && /^\d{4}-\d{2}-\d{2}T/.test(n.slice(prefix.length)) && existsSync(join(dir, n, "manifest.json")))
    .sort();
}

/**
 * One scheduled run: cut (the broker stops for every tenant, by design: the artifact needs a
 * consistent store), back up into a dated directory, resume the broker whatever happened, then keep
 * the newest `keep` complete artifacts. Incomplete ones are left for `cotal clean restore-attempt`.
 */
export async function runScheduledBackup(p: SpaceBackupPayload, log: (m: string) => void = () => undefined): Promise<ScheduledBackupResult> {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const artifact = join(p.out, `${p.name}-${stamp}`);
  const bytes = await underCut(p.root, `backup of ${p.name}`, log, async () => (await spaceBackup({ root: p.root, space: p.name, out: artifact, mode: "offline" })).bytes);
  const all = completeArtifacts(p.out, p.name);
  const keep = p.keep ?? DEFAULT_KEEP;
  const pruned = all.slice(0, Math.max(0, all.length - keep));
  for (const n of pruned) rmSync(join(p.out, n), { recursive: true, force: true });
  return { space: p.name, artifact, bytes, kept: all.slice(-keep), pruned };
}

/**
 * Offline work a worker does for a running broker: cut (it stops for every tenant), the work, then
 * `up` resumes the preserved store whatever the work did.
 */
async function underCut<T>(root: string, what: string, log: (m: string) => void, work: () => Promise<T>): Promise<T> {
  if (!brokerState(new RootLayout(root)).running) {
    throw new SagaError("broker-not-running", `${what} cuts a running broker; this one is stopped`, { next: "cotal up --detach   # then the job can run" });
  }
  await down({ root, preserveState: true });
  try {
    return await work();
  } finally {
    await up({ root, detach: true });
    log(`${what}: broker resumed`);
  }
}

/** A queued restore: the same checks as the interactive verb (empty namespace, account key, sha256). */
export function runQueuedRestore(p: SpaceRestorePayload, log: (m: string) => void = () => undefined): Promise<SpaceRestoreResult> {
  return underCut(p.root, `restore of ${p.name}`, log, () => spaceRestore({ root: p.root, space: p.name, from: p.from, ...(p.rebindAccount ? { rebindAccount: true } : {}) }));
}
