import { GUARDS_ON, type Guards } from "../guards.js";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterPid, CotalError } from "../errors.js";
import { isValidSpaceName } from "../names.js";
import { assertLockHeld, type MaintenanceLock } from "../lock/maintenance-lock.js";
import { ownerStatus, type ProcessOwner } from "../lock/process-identity.js";
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

/** A backup or restore running against a ready cut. Ownership precedes existence (docs/lifecycle.md "Backup and restore"). */
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

/**
 * `up --rotate-sys` in progress: its successor trust is staged (auth/broker.secrets/successor.json)
 * before any live file changes, so a re-run applies exactly it and re-mints every $SYS cred.
 */
export interface RotationEntry {
  op: "rotate-sys";
  generation: number;
  startedAt: string;
  /** Never set: keeps `entry.space` readable on the union. */
  space?: undefined;
}

/**
 * An online `space backup`: the tenant's account JWT revokes every user issued before the quiesce
 * (its clients are evicted and refused) until the lift is proven. Written before the quiesce
 * mutation, removed only after the lift's proof; `out` is recorded before the directory exists.
 */
export interface QuiesceEntry {
  op: "quiesce";
  space: string;
  /** backup: an online `space backup`; restore: an online `space restore` (maintenance/online-restore.ts). */
  purpose: "backup" | "restore";
  /** backup: the artifact it writes; restore: the artifact it reads (never removed by a recovery). */
  out: string;
  /** restore: the artifact's durable streams (a recovery deletes them where partially installed). */
  streams?: string[];
  /** restore --replace: the tenant's streams it deletes, recorded before the first deletion. */
  replace?: { streams: string[]; deletionBegan: boolean };
  /**
   * restore: where the copy of every stream it deletes is kept (restore-safety.ts), recorded before
   * the copy exists; `complete` once its manifest is written, before any deletion. A stopped restore
   * whose deletion began is put back from a complete copy by its recovery.
   */
  safety?: { dir: string; complete: boolean };
  /** restore: the account key the artifact pins differs and --rebind-account accepted it. */
  rebindAccount?: boolean;
  /** The artifact directory's inode once this attempt created it: only a proven-ours dir is removed. */
  outIno?: { dev: number; ino: number };
  attemptId: string;
  owner: ProcessOwner;
  startedAt: string;
  stage: QuiesceStage;
}

/**
 * backup: journaled → quiesced → snapshotting → published → lifting. restore: journaled → quiesced →
 * (replace: deleting) → restoring → verified → lifting; `unfinished`: `cotal up` lifted a restore
 * whose deletion had begun, emptied of its partial streams, and left the entry for the re-run.
 */
export type QuiesceStage = "journaled" | "quiesced" | "snapshotting" | "published" | "lifting" | "deleting" | "restoring" | "verified" | "unfinished";

export type JournalEntry = SpaceRmEntry | CutEntry | RotationEntry | QuiesceEntry;

const QUIESCE_STAGES: readonly string[] = ["journaled", "quiesced", "snapshotting", "published", "lifting", "deleting", "restoring", "verified", "unfinished"];

/** The command that finishes a stopped online restore (printed by refusals and `status`). */
export function restoreRerun(entry: QuiesceEntry): string {
  return `cotal space restore ${entry.space} --from ${entry.out}${entry.rebindAccount ? " --rebind-account" : ""}${entry.replace ? " --replace --yes" : ""}`;
}

const CUT_STATES: readonly string[] = ["cut-intent", "cut-committed", "ready", "resume-intent"];

/** The journal entry, undefined when there is none; anything unreadable is a refusal, never "clean". */
export function readJournal(layout: RootLayout): JournalEntry | undefined {
  let text: string | undefined;
  try {
    text = readTextIfExists(layout.journalFile);
  } catch (err) {
    throw new CotalError("corrupt-record", `${layout.journalFile} cannot be read (${(err as Error).message}); a destructive operation may be half done`, {
      next: `cat ${layout.journalFile}   # if it names a space, re-run cotal space rm with it and --yes; otherwise move the file aside`,
    });
  }
  if (text === undefined) return undefined;
  try {
    const j = JSON.parse(text) as JournalEntry;
    if (j.op === "space-rm" && typeof j.space === "string" && isValidSpaceName(j.space)) return j;
    if (j.op === "cut" && CUT_STATES.includes(j.state) && typeof j.cutId === "string") return j;
    if (j.op === "rotate-sys" && Number.isInteger(j.generation)) return j;
    if (j.op === "quiesce" && typeof j.space === "string" && isValidSpaceName(j.space) && (j.purpose === "backup" || j.purpose === "restore") && typeof j.out === "string" && typeof j.attemptId === "string" && QUIESCE_STAGES.includes(j.stage) && Number.isInteger(j.owner?.pid)) return j;
  } catch {
    // fall through
  }
  throw new CotalError("corrupt-record", `${layout.journalFile} is unreadable; a destructive operation may be half done`, {
    next: `cat ${layout.journalFile}   # if it names a space, re-run cotal space rm with it and --yes; otherwise move the file aside`,
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

/** What a verb may find in the journal and still proceed (docs/refusals.md, "the journal blocks the root"). */
export interface JournalPolicy {
  /** The verb, as an operator reads it in the refusal. */
  verb: string;
  /** `space rm <name>`: only re-running that very removal passes its entry. */
  removal?: string;
  /** The cut's own verbs (a resumed `up`, `down --preserve-state`, offline backup/restore). */
  cut?: boolean;
  /** reconcile only: a removal entry passes here; reconcile itself refuses unless the record is unresumable. */
  anyRemoval?: boolean;
  /** `up --rotate-sys`: its own unfinished rotation passes (the re-run finishes it). */
  rotation?: boolean;
  /** `up` and `space backup`: a backup's quiesce whose owner is dead passes (they lift it first). */
  quiesce?: boolean;
  /** `up`: a stopped restore's entry passes too (it lifts it; an unfinished --replace stays journaled). */
  liftsRestore?: boolean;
  /** `space restore <name>`: a stopped restore of that space, or any stopped backup, passes (the re-run finishes it). */
  restoreOf?: string;
  /** `down`: stopping is the way out of every entry, so none refuses it (each resumes from disk later). */
  any?: boolean;
}

/** Whether a journal entry's owner process still runs ("unknown": another host's, never judged dead). */
export type OwnerState = "alive" | "dead" | "unknown";

/** Pure: the refusal a journal entry makes for a verb, or undefined when the verb may proceed. */
export function journalRefusal(entry: JournalEntry | undefined, policy: JournalPolicy, owner: OwnerState = "dead"): CotalError | undefined {
  if (!entry || policy.any) return undefined;
  if (entry.op === "quiesce" && entry.purpose === "restore") {
    if (owner !== "dead" && entry.stage !== "unfinished") {
      return new CotalError("lock-held", `an online restore of space ${entry.space} (pid ${entry.owner.pid} on ${entry.owner.host}, ${entry.stage} since ${entry.startedAt}) holds the tenant quiesced; ${policy.verb} waits for it`, {
        next: afterPid(entry.owner.pid),
        details: { journal: entry, owner },
      });
    }
    if (policy.liftsRestore || policy.restoreOf === entry.space) return undefined;
    return new CotalError("journal-blocked", `an online restore of space ${entry.space} from ${entry.out} (started ${entry.startedAt}) is unfinished (${entry.stage}); ${policy.verb} waits for it`, {
      next: `${restoreRerun(entry)}   # re-running it finishes the restore`,
      details: { journal: entry },
    });
  }
  if (entry.op === "quiesce") {
    // A running backup is busy, not broken: its owner lifts the quiesce itself.
    if (owner !== "dead") {
      return new CotalError("lock-held", `an online backup of space ${entry.space} (pid ${entry.owner.pid} on ${entry.owner.host}, ${entry.stage} since ${entry.startedAt}) holds the tenant quiesced; ${policy.verb} waits for it`, {
        next: afterPid(entry.owner.pid),
        details: { journal: entry, owner },
      });
    }
    if (policy.quiesce || policy.restoreOf !== undefined) return undefined;
    return new CotalError("journal-blocked", `an online backup of space ${entry.space} (started ${entry.startedAt}) stopped while the tenant was quiesced (${entry.stage}); ${policy.verb} waits for the lift`, {
      next: "cotal up   # lifts the quiesce and removes a partial artifact",
      details: { journal: entry },
    });
  }
  if (entry.op === "rotate-sys") {
    if (policy.rotation) return undefined;
    return new CotalError("journal-blocked", `a system-account rotation to generation ${entry.generation} (started ${entry.startedAt}) is unfinished; ${policy.verb} waits for it`, {
      next: "cotal up --rotate-sys   # re-running it finishes the rotation",
      details: { journal: entry },
    });
  }
  if (entry.op === "cut") {
    if (policy.cut) return undefined;
    return new CotalError("journal-blocked", `a preserve-state cut (${entry.cutId}, ${entry.state}) holds the store; ${policy.verb} waits for the broker to resume it`, {
      next: "cotal up   # resumes the preserved store and clears the cut",
      details: { journal: entry },
    });
  }
  if (policy.removal === entry.space || policy.anyRemoval) return undefined;
  return new CotalError("journal-blocked", `a removal of space ${entry.space} (started ${entry.startedAt}${entry.streamsDeleted ? ", its streams already deleted" : ""}) is unfinished; ${policy.verb} waits for it`, {
    next: `cotal space rm ${entry.space} --yes   # re-running it finishes the removal`,
    details: { journal: entry },
  });
}

/** Reads the journal and refuses as `journalRefusal` says; an unreadable journal refuses every verb. */
export function assertJournalAllows(layout: RootLayout, policy: JournalPolicy, guards: Guards = GUARDS_ON): JournalEntry | undefined {
  const entry = readJournal(layout);
  const refusal = guards.IGNORE_JOURNAL ? undefined : journalRefusal(entry, policy, entry?.op === "quiesce" ? ownerStatus(entry.owner) : "dead");
  if (refusal) throw refusal;
  return entry;
}

/** The quiesce entry that holds its tenant quiesced now: an `unfinished` restore has already been lifted. */
export function standingQuiesce(journal: JournalEntry | null | undefined): QuiesceEntry | undefined {
  return journal?.op === "quiesce" && journal.stage !== "unfinished" ? journal : undefined;
}

/** The cut entry, or undefined when the journal holds none (a space-rm entry is not a cut). */
export function readCut(layout: RootLayout): CutEntry | undefined {
  const j = readJournal(layout);
  return j?.op === "cut" ? j : undefined;
}

/** Where an attempt works: under the root's maintenance dir, named by its id. */
export function attemptWorkDir(layout: RootLayout, id: string): string {
  return join(layout.maintenanceDir, `attempt-${id}`);
}

/** The work dir of the attempt the journal records; undefined when none, null when the journal is unreadable. */
export function journaledAttemptDir(layout: RootLayout): string | undefined | null {
  try {
    const cut = readCut(layout);
    return cut?.attempt ? attemptWorkDir(layout, cut.attempt.id) : undefined;
  } catch {
    return null;
  }
}
