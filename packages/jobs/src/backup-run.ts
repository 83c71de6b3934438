import { readdirSync, rmSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { brokerState, checkScheduleDir, describeError, isCotalError, RootLayout, CotalError, spaceBackup, spaceRestore, spaceStoreBytes, type SpaceRestoreResult } from "@cotal/core";
import { type Guards } from "@cotal/core/light";
import { renderRerun } from "@cotal/core/errors";
import type { SpaceBackupPayload, SpaceRestorePayload } from "./payloads.js";

export const DEFAULT_KEEP = 7;

export interface ScheduledBackupResult {
  space: string;
  /** "done": an online artifact written; "skipped": the tenant stood quiesced by another backup or restore (not a failure). */
  outcome: "done" | "skipped";
  artifact?: string;
  bytes: number;
  kept: string[];
  pruned: string[];
  /** Why the run skipped: the quiesce it found. */
  reason?: string;
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

/** The quiesce a live backup or restore of `space` holds, as the verb's refusal names it (saga/journal.ts). */
function quiescedByOther(err: unknown, space: string): string | undefined {
  if (!isCotalError(err, "lock-held")) return undefined;
  const j = err.details?.journal as { op?: string; space?: string; purpose?: string; attemptId?: string; owner?: { pid?: number } } | undefined;
  if (j?.op !== "quiesce" || j.space !== space) return undefined;
  return `space ${space} stands quiesced by an online ${j.purpose ?? "backup"} (${j.attemptId ?? "?"}, pid ${j.owner?.pid ?? "?"}); this run skipped`;
}

/** The command that (re-)establishes this schedule, as a refusal's "run it again" (root named, every flag kept). */
export function scheduleArgv(p: SpaceBackupPayload): string[] | undefined {
  if (p.every === undefined) return undefined;
  return ["--root", p.root, "space", "backup", p.name, "--out", p.out, "--every", p.every, "--keep", String(p.keep ?? DEFAULT_KEEP), "--queue"];
}

/**
 * Each run checks its directory before anything else (issue #29): one the run could not write fails
 * the run here, with the tenant untouched (no quiesce, no snapshot). The refusal's next step is the
 * fix followed by the scheduling command, which checks the directory again; a rendered `next`,
 * because a job has no command line of its own. An absent directory is created.
 */
function checkRunDir(p: SpaceBackupPayload): void {
  try {
    checkScheduleDir(p.out, { space: p.name, needBytes: spaceStoreBytes(p.root, p.name), root: p.root });
    mkdirSync(p.out, { recursive: true });
  } catch (err) {
    const argv = scheduleArgv(p);
    const e = describeError(err, argv ? { argv } : { rerun: renderRerun(["--root", p.root, "jobs", "schedules"]) });
    throw new CotalError("io", `scheduled backup of ${p.name}: ${e.message}`, { ...(e.next ? { next: e.next } : {}), details: { ...e.details, space: p.name }, cause: err });
  }
}

/**
 * One scheduled run, online (backup/online-backup.ts: only this tenant quiesced, no broker
 * stop): back up into a dated directory, then keep the newest `keep` complete artifacts. A run that
 * finds the tenant quiesced by another live backup or restore skips with the reason as its result.
 */
export async function runScheduledBackup(p: SpaceBackupPayload, log: (m: string) => void = () => undefined, guards?: Guards): Promise<ScheduledBackupResult> {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const artifact = join(p.out, `${p.name}-${stamp}`);
  checkRunDir(p);
  if (!brokerState(new RootLayout(p.root)).running) {
    throw new CotalError("broker-not-running", `the scheduled backup of ${p.name} runs online on the running broker; this one is stopped`, { next: "cotal up --detach   # then the job can run" });
  }
  let bytes: number;
  try {
    bytes = (await spaceBackup({ root: p.root, space: p.name, out: artifact, mode: "online", ...(guards ? { guards } : {}) })).bytes;
  } catch (err) {
    const reason = quiescedByOther(err, p.name);
    if (!reason) throw err;
    log(`backup of ${p.name}: skipped: ${reason}`);
    return { space: p.name, outcome: "skipped", bytes: 0, kept: completeArtifacts(p.out, p.name), pruned: [], reason };
  }
  log(`backup of ${p.name}: online, ${bytes} bytes into ${artifact}`);
  const all = completeArtifacts(p.out, p.name);
  const keep = p.keep ?? DEFAULT_KEEP;
  const pruned = all.slice(0, Math.max(0, all.length - keep));
  for (const n of pruned) rmSync(join(p.out, n), { recursive: true, force: true });
  return { space: p.name, outcome: "done", artifact, bytes, kept: all.slice(-keep), pruned };
}

/**
 * A queued restore, online (backup/online-restore.ts: only this tenant quiesced, no broker
 * stop), with the interactive verb's checks (verified artifact, account key, empty namespace or
 * `replace` + `yes`). `requestId` (the job's id and enqueue time, the same across retries and
 * re-deliveries) makes a re-delivery after a completed restore answer from the root's receipt.
 */
export async function runQueuedRestore(p: SpaceRestorePayload, requestId: string, log: (m: string) => void = () => undefined, guards?: Guards): Promise<SpaceRestoreResult & { alreadyRestored?: number }> {
  if (!brokerState(new RootLayout(p.root)).running) {
    throw new CotalError("broker-not-running", `the queued restore of ${p.name} runs online on the running broker; this one is stopped`, { next: "cotal up --detach   # then the job can run" });
  }
  const r = await spaceRestore({
    root: p.root,
    space: p.name,
    from: p.from,
    mode: "online",
    requestId,
    ...(p.rebindAccount ? { rebindAccount: true } : {}),
    ...(p.replace ? { replace: true, yes: p.yes === true } : {}),
    onNotice: log,
    ...(guards ? { guards } : {}),
  });
  const done = (r as { alreadyRestored?: number }).alreadyRestored;
  log(done !== undefined ? `restore of ${p.name}: already restored by request ${requestId}; nothing done` : `restore of ${p.name}: online${p.replace ? " (--replace)" : ""}, ${r.streams.length} stream(s) from ${p.from}`);
  return r;
}
