import { existsSync } from "node:fs";
import { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { brokerState } from "../broker/runtime.js";
import { ownerStatus } from "../lock/process-identity.js";
import { RootLayout } from "../root/layout.js";
import { clearJournal, readCut, writeJournal, type CutEntry } from "../journal/journal.js";
import { bootRoot, type BootContext, type BootOptions, type UpResult } from "./boot-root.js";
import { storeIdentity } from "../backup/cut.js";

/** Cheap, lock-free probe (it only names up's lock purpose); the decision is the journal read under the lock. */
export function cutJournalPresent(root: string): boolean {
  const layout = new RootLayout(root);
  if (!existsSync(layout.journalFile)) return false;
  try {
    return readCut(layout) !== undefined;
  } catch {
    return false; // a corrupt journal is up's ordinary refusal to make, not ours
  }
}

/**
 * A resumed `up` after `down --preserve-state` (002), under the lock `up`'s preamble holds: journal
 * resume-intent, then the boot step on the preserved store. The journal leaves resume-intent before
 * this returns or throws, so the lock (released by the preamble after us) never frees a resume-intent.
 */
export async function resumeCut(ctx: BootContext, cut: CutEntry, opts: BootOptions): Promise<UpResult> {
  const { layout, lock } = ctx;
  if (cut.attempt) {
    const alive = ownerStatus(cut.attempt.owner) !== "dead";
    throw new CotalError("attempt-pending", `a ${cut.attempt.kind} of space ${cut.attempt.space} (attempt ${cut.attempt.id}) ${alive ? "is running" : "died"} on the preserved store`, {
      next: alive ? `while kill -0 ${cut.attempt.owner.pid} 2>/dev/null; do sleep 1; done; cotal up` : `cotal clean restore-attempt --attempt ${cut.attempt.id}   # then cotal up`,
      details: { attempt: cut.attempt },
    });
  }
  const running = brokerState(layout).running;
  // Before cut-committed nothing was stopped by the cut, so there is no preserved store to resume.
  if (cut.state === "cut-intent" || (cut.state === "cut-committed" && running)) {
    clearJournal(layout, lock);
    const r = await bootRoot(ctx, opts);
    return { ...r, notes: [...r.notes, `abandoned an unfinished cut ${cut.cutId} (${cut.state}); the broker never stopped for it`] };
  }
  if (cut.store && existsSync(layout.storeDir)) {
    const id = storeIdentity(layout);
    if (id.dev !== cut.store.dev || id.ino !== cut.store.ino) {
      throw new CotalError("resume-refused", `${layout.storeDir} is not the store inode cut ${cut.cutId} preserved (${cut.store.dev}:${cut.store.ino}, found ${id.dev}:${id.ino})`, {
        next: `put the preserved store back at ${layout.storeDir}, or inspect and remove ${layout.journalFile} by hand`,
      });
    }
  } else if (cut.store) {
    throw new CotalError("resume-refused", `the preserved store ${layout.storeDir} is gone`, { next: `restore ${layout.storeDir}, or inspect and remove ${layout.journalFile} by hand` });
  }
  writeJournal(layout, lock, { ...cut, state: "resume-intent" });
  await failpoint("resume-intent");
  try {
    const r = await bootRoot(ctx, opts);
    clearJournal(layout, lock);
    return { ...r, notes: [...r.notes, `resumed the store preserved by cut ${cut.cutId}`] };
  } catch (err) {
    // Still under the lock: leave the journal in a state the next `up` acts on, never resume-intent with a free lock.
    if (brokerState(layout).running) clearJournal(layout, lock);
    else writeJournal(layout, lock, { ...cut, state: "ready", lastResumeError: (err as Error).message });
    throw err;
  }
}
