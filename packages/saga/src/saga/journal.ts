import { rmSync } from "node:fs";
import { SagaError } from "../errors.js";
import { assertLockHeld, type MaintenanceLock } from "../lock/maintenance-lock.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";

/** The maintenance journal: a destructive verb's durable intent, written and cleared under the held lock. */
export interface SpaceRmEntry {
  op: "space-rm";
  space: string;
  startedAt: string;
  /** Set once the commit point (stream deletion) has passed. */
  streamsDeleted?: boolean;
}

export type JournalEntry = SpaceRmEntry;

export function readJournal(layout: RootLayout): JournalEntry | undefined {
  const text = readTextIfExists(layout.journalFile);
  if (text === undefined) return undefined;
  try {
    const j = JSON.parse(text) as JournalEntry;
    if (j.op === "space-rm" && typeof j.space === "string") return j;
  } catch {
    // fall through
  }
  throw new SagaError("corrupt-record", `${layout.journalFile} is unreadable; a destructive operation may be half done`, {
    exit: `inspect ${layout.journalFile}; if it named a space, re-run \`cotal space rm <space>\`, otherwise move it aside`,
  });
}

/** Helpers that journal take the caller's held lock and verify it; they never take their own. */
export function writeJournal(layout: RootLayout, heldLock: MaintenanceLock, entry: JournalEntry): void {
  assertLockHeld(heldLock);
  writeJsonAtomic(layout.journalFile, entry);
}

export function clearJournal(layout: RootLayout, heldLock: MaintenanceLock): void {
  assertLockHeld(heldLock);
  rmSync(layout.journalFile, { force: true });
}

/** While a space-rm entry stands, every verb refuses except re-running that removal. */
export function assertJournalAllows(layout: RootLayout, verb: { op: "space-rm"; space: string } | { op: "other"; name: string }): void {
  const j = readJournal(layout);
  if (!j) return;
  if (verb.op === "space-rm" && verb.space === j.space) return;
  throw new SagaError("journal-blocked", `a removal of space ${j.space} (started ${j.startedAt}) is unfinished; every other verb waits for it`, {
    exit: `cotal space rm ${j.space}   # re-running it finishes the removal`,
    details: { journal: j },
  });
}
