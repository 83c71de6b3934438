import { rmSync } from "node:fs";
import { SagaError } from "../errors.js";
import { assertLockHeld, type MaintenanceLock } from "../lock/maintenance-lock.js";
import type { ProcessOwner } from "../lock/process-identity.js";
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

/**
 * `cotal down --preserve-state`: cut-intent → cut-committed → (broker stopped) → ready; a resumed
 * `up` moves ready → resume-intent and clears the entry once the broker serves the store again.
 */
export type CutState = "cut-intent" | "cut-committed" | "ready" | "resume-intent";

/** A path an offline attempt owns: journaled before it exists, its inode recorded right after creation. */
export interface OwnedPath {
  role: "clone" | "out" | "work";
  path: string;
  dev?: number;
  ino?: number;
}

/** A backup or restore running against a ready cut. Ownership precedes existence (004). */
export interface AttemptClaim {
  id: string;
  kind: "backup" | "restore";
  space: string;
  owner: ProcessOwner;
  startedAt: string;
  stage: string;
  paths: OwnedPath[];
  /** Isolated brokers this attempt spawned (killed by recovery when still alive). */
  brokers: ProcessOwner[];
  /** Restore target pass: streams this attempt may have created on the real store (journaled before the request). */
  installed?: string[];
}

export interface CutEntry {
  op: "cut";
  state: CutState;
  cutId: string;
  startedAt: string;
  readyAt?: string;
  /** The preserved store's identity: a resume opens exactly this inode or refuses. */
  store?: { dev: number; ino: number };
  attempt?: AttemptClaim;
  lastResumeError?: string;
  /** Never set: keeps `entry.space` readable on the union for space-rm callers. */
  space?: undefined;
}

export type JournalEntry = SpaceRmEntry | CutEntry;

const CUT_STATES: readonly string[] = ["cut-intent", "cut-committed", "ready", "resume-intent"];

export function readJournal(layout: RootLayout): JournalEntry | undefined {
  const text = readTextIfExists(layout.journalFile);
  if (text === undefined) return undefined;
  try {
    const j = JSON.parse(text) as JournalEntry;
    if (j.op === "space-rm" && typeof j.space === "string") return j;
    if (j.op === "cut" && CUT_STATES.includes(j.state) && typeof j.cutId === "string") return j;
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

/** While a space-rm entry stands, every verb refuses except re-running that removal; a cut refuses every saga verb. */
export function assertJournalAllows(layout: RootLayout, verb: { op: "space-rm"; space: string } | { op: "other"; name: string }): void {
  const j = readJournal(layout);
  if (!j) return;
  if (j.op === "cut") {
    throw new SagaError("journal-blocked", `a preserve-state cut (${j.cutId}, ${j.state}) holds the store; ${verb.op === "other" ? verb.name : "space rm"} waits for the broker to resume it`, {
      exit: "cotal up   # resumes the preserved store and clears the cut",
      details: { journal: j },
    });
  }
  if (verb.op === "space-rm" && verb.space === j.space) return;
  throw new SagaError("journal-blocked", `a removal of space ${j.space} (started ${j.startedAt}) is unfinished; every other verb waits for it`, {
    exit: `cotal space rm ${j.space}   # re-running it finishes the removal`,
    details: { journal: j },
  });
}
