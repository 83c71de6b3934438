import { readdirSync, rmSync, existsSync } from "node:fs";
import { join } from "node:path";
import { brokerState, down, RootLayout, SagaError, spaceBackup, up } from "@cotal/saga";
import type { SpaceBackupPayload } from "./payloads.js";

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
  const layout = new RootLayout(p.root);
  if (!brokerState(layout).running) {
    throw new SagaError("broker-not-running", "a scheduled backup cuts a running broker; this one is stopped", { exit: "cotal up --detach   # the next scheduled run then proceeds" });
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const artifact = join(p.out, `${p.name}-${stamp}`);
  await down({ root: p.root, preserveState: true });
  let bytes = 0;
  try {
    bytes = (await spaceBackup({ root: p.root, space: p.name, out: artifact })).bytes;
  } finally {
    await up({ root: p.root, detach: true }); // resumes the preserved store
    log(`backup of ${p.name}: broker resumed`);
  }
  const all = completeArtifacts(p.out, p.name);
  const keep = p.keep ?? DEFAULT_KEEP;
  const pruned = all.slice(0, Math.max(0, all.length - keep));
  for (const n of pruned) rmSync(join(p.out, n), { recursive: true, force: true });
  return { space: p.name, artifact, bytes, kept: all.slice(-keep), pruned };
}
