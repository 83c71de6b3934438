import { type Guards } from "../guards.js";
import { statSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { afterPid, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { stopBroker } from "../broker/process.js";
import { brokerState } from "../broker/runtime.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { ownerStatus } from "../lock/process-identity.js";
import { certainInventory } from "../root/account-store.js";
import { ensureSecretDir } from "../root/secret-files.js";
import type { RootLayout } from "../root/layout.js";
import { assertJournalAllows, readCut, writeJournal, type CutEntry } from "../journal/journal.js";

export interface CutResult {
  cutId: string;
  state: "ready";
  stopped: boolean;
  pid?: number;
  forced: boolean;
  /** True when a cut was already ready (re-running the verb is a no-op). */
  already: boolean;
}

export function storeIdentity(layout: RootLayout): { dev: number; ino: number } {
  const st = statSync(layout.storeDir);
  return { dev: st.dev, ino: st.ino };
}

/**
 * `down --preserve-state` under the caller's held lock: cut-intent → cut-committed → stop the broker
 * → ready. Each boundary is fsynced (writeJsonAtomic), so a re-run resumes from the last one written;
 * the broker is stopped only once the journal says cut-committed.
 */
export async function preserveStateCut(layout: RootLayout, heldLock: MaintenanceLock, graceMs: number | undefined, guards: Guards): Promise<CutResult> {
  // A removal or a rotation in progress: a cut taken now would capture a store the config no longer describes.
  assertJournalAllows(layout, { verb: "down --preserve-state" }, guards);
  const existing = readCut(layout);
  if (existing?.state === "ready") {
    if (brokerState(layout).running) {
      throw new CotalError("resume-refused", `the journal says cut ${existing.cutId} is ready, yet a broker is running on ${layout.root}`, {
        next: "cotal status   # then cotal down --preserve-state once the broker is understood",
      });
    }
    return { cutId: existing.cutId, state: "ready", stopped: false, forced: false, already: true };
  }
  if (existing?.state === "resume-intent") {
    throw new CotalError("resume-refused", `cut ${existing.cutId} is being resumed by \`cotal up\``, { next: "cotal up   # finishes the resume; then cotal down --preserve-state" });
  }
  if (existing?.attempt && ownerStatus(existing.attempt.owner) !== "dead") {
    throw new CotalError("attempt-pending", `a ${existing.attempt.kind} attempt ${existing.attempt.id} is recorded as running`, { next: afterPid(existing.attempt.owner.pid) });
  }
  // The tenant list must be certain before anything stops: a cut of an uncertain root helps nobody.
  certainInventory(layout, guards);
  ensureSecretDir(layout.storeDir);
  let entry: CutEntry = existing ?? { op: "cut", state: "cut-intent", cutId: randomUUID(), startedAt: new Date().toISOString() };
  if (!existing) writeJournal(layout, heldLock, entry);
  await failpoint("cut-intent");
  if (entry.state === "cut-intent") {
    entry = { ...entry, state: "cut-committed" };
    writeJournal(layout, heldLock, entry);
  }
  await failpoint("cut-committed");
  const stopped = await stopBroker(layout, graceMs, guards);
  if (brokerState(layout).running) {
    throw new CotalError("broker-running", "the broker is still running after the stop; the cut stays committed", { next: "cotal down --preserve-state" });
  }
  writeJournal(layout, heldLock, { ...entry, state: "ready", readyAt: new Date().toISOString(), store: storeIdentity(layout) });
  return { cutId: entry.cutId, state: "ready", ...stopped, already: false };
}

/** Backup and restore need a ready cut and a stopped broker; anything else refuses with the next step. */
export function requireReadyCut(layout: RootLayout, verb: "space backup" | "space restore", guards: Guards): CutEntry {
  assertJournalAllows(layout, { verb: `${verb} offline` }, guards); // a standing removal names itself first
  const cut = readCut(layout);
  if (!cut || cut.state !== "ready") {
    throw new CotalError("cut-required", `${verb} reads a preserved store, but ${cut ? `cut ${cut.cutId} is ${cut.state}` : "no preserve-state cut is in place"}`, {
      next: "cotal down --preserve-state",
      details: cut ? { journal: cut } : {},
    });
  }
  if (brokerState(layout).running) {
    throw new CotalError("broker-running", `cut ${cut.cutId} is ready but a broker serves ${layout.root}`, { next: "cotal down --preserve-state" });
  }
  const id = storeIdentity(layout);
  if (!cut.store || cut.store.dev !== id.dev || cut.store.ino !== id.ino) {
    throw new CotalError("resume-refused", `the store ${layout.storeDir} is not the inode cut ${cut.cutId} preserved`, {
      next: "put the preserved store back, or clear maintenance/journal.json by hand after inspecting it",
    });
  }
  if (cut.attempt) {
    throw new CotalError("attempt-pending", `a ${cut.attempt.kind} attempt ${cut.attempt.id} of space ${cut.attempt.space} (pid ${cut.attempt.owner.pid}) is unfinished`, {
      next: `cotal clean restore-attempt --attempt ${cut.attempt.id}`,
      details: { attempt: cut.attempt },
    });
  }
  return cut;
}
