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
  /** Private brokers this attempt spawned (killed by recovery when still alive). */
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
  /** The system account it retires (absent in an entry written before it was kept): a cluster's raft state is carried from its directory. */
  retired?: string;
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
  /** backup: an online `space backup`; restore: an online `space restore` (backup/online-restore.ts). */
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

/**
 * The verbs the journal judges, one row each of JOURNAL_POLICY (docs/refusals.md, "the journal blocks
 * the root"). A verb whose passes differ by how it runs has a row per way: `up` on a cluster root,
 * backup and restore offline (through a cut) and online (through a quiesce); `status` asks what
 * blocks every mutating verb; reconcile asks again once the record proves resumable.
 */
export type JournalVerb =
  | "space add"
  | "space limits"
  | "space revoke"
  | "space rotate-key"
  | "space creds"
  | "space rm"
  | "space backup"
  | "space backup offline"
  | "space restore"
  | "space restore offline"
  | "up"
  | "up cluster"
  | "up --rotate-sys"
  | "down"
  | "down --preserve-state"
  | "broker reconcile"
  | "broker reconcile resumable"
  | "clean restore-attempt"
  | "clean orphan-streams"
  | "status";

/**
 * What a journal entry is to the policy: its op, a stopped backup's or restore's quiesce by purpose,
 * and `busy`: a quiesce whose owner still runs (or runs on another host), never judged dead.
 */
export type JournalEntryKind = "removal" | "cut" | "rotation" | "backup" | "restore" | "busy";

/** A cell: the verb proceeds, proceeds only over its own space's entry, or refuses with this code. */
export type JournalDecision = "proceed" | "own space" | "journal-blocked" | "lock-held";

/** A verb's row: how the refusal names it, and a decision per entry kind (typed per kind: only a removal or a restore names a space, only a busy owner is `lock-held`). */
export interface JournalVerbRow {
  says: string;
  removal: "proceed" | "own space" | "journal-blocked";
  cut: "proceed" | "journal-blocked";
  rotation: "proceed" | "journal-blocked";
  backup: "proceed" | "journal-blocked";
  restore: "proceed" | "own space" | "journal-blocked";
  busy: "proceed" | "lock-held";
}

const P = "proceed";
const OWN = "own space";
const JB = "journal-blocked";
const LH = "lock-held";

/**
 * The one home of who passes what. A cut passes its own verbs (resume, backup/restore offline, the
 * cleanups); a stopped backup passes what lifts it (up, a backup, any restore); a stopped restore
 * passes up (it lifts it) and its own re-run; a rotation its re-run; a removal its re-run, reconcile
 * (which checks the record itself) and a cluster's up (which restarts the node that finishes it);
 * `down` passes everything: stopping is the way out of each, and each resumes from disk.
 */
export const JOURNAL_POLICY: Readonly<Record<JournalVerb, Readonly<JournalVerbRow>>> = {
  "space add":                  { says: "space add",              removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space limits":               { says: "space limits",           removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space revoke":               { says: "space revoke",           removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space rotate-key":           { says: "space rotate-key",       removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space creds":                { says: "space creds",            removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space rm":                   { says: "space rm",               removal: OWN,  cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space backup":               { says: "space backup",           removal: JB,   cut: JB,  rotation: JB,  backup: P,   restore: JB,   busy: LH },
  "space backup offline":       { says: "space backup",           removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "space restore":              { says: "space restore",          removal: JB,   cut: JB,  rotation: JB,  backup: P,   restore: OWN,  busy: LH },
  "space restore offline":      { says: "space restore",          removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  up:                           { says: "up",                     removal: JB,   cut: P,   rotation: JB,  backup: P,   restore: P,    busy: LH },
  "up cluster":                 { says: "up",                     removal: P,    cut: P,   rotation: JB,  backup: P,   restore: P,    busy: LH },
  "up --rotate-sys":            { says: "up --rotate-sys",        removal: JB,   cut: JB,  rotation: P,   backup: JB,  restore: JB,   busy: LH },
  down:                         { says: "down",                   removal: P,    cut: P,   rotation: P,   backup: P,   restore: P,    busy: P },
  "down --preserve-state":      { says: "down --preserve-state",  removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "broker reconcile":           { says: "broker reconcile",       removal: P,    cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "broker reconcile resumable": { says: "broker reconcile",       removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "clean restore-attempt":      { says: "clean restore-attempt",  removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  "clean orphan-streams":       { says: "clean orphan-streams",   removal: JB,   cut: P,   rotation: JB,  backup: JB,  restore: JB,   busy: LH },
  status:                       { says: "every mutating verb",    removal: JB,   cut: JB,  rotation: JB,  backup: JB,  restore: JB,   busy: LH },
};

/** The verbs whose row holds `own space`: they name the space they work on. */
export type JournalSpaceVerb = "space rm" | "space restore";

/** What a verb asks the journal: its row, its space where the row needs one, and how the refusal names it when not as the row says (`space rm beta`, `broker reconcile --adopt-disk`). */
export type JournalPolicy = { verb: Exclude<JournalVerb, JournalSpaceVerb>; says?: string } | { verb: JournalSpaceVerb; space: string; says?: string };

/** How a refusal names the verb. */
export function journalVerbSays(policy: JournalPolicy): string {
  return policy.says ?? JOURNAL_POLICY[policy.verb].says;
}

/** Whether a journal entry's owner process still runs ("unknown": another host's, never judged dead). */
export type OwnerState = "alive" | "dead" | "unknown";

/** Pure: the entry's kind; a quiesce's owner decides whether it is busy (an `unfinished` restore has been lifted: never busy). */
export function journalEntryKind(entry: JournalEntry, owner: OwnerState): JournalEntryKind {
  if (entry.op === "space-rm") return "removal";
  if (entry.op === "cut") return "cut";
  if (entry.op === "rotate-sys") return "rotation";
  if (owner !== "dead" && !(entry.purpose === "restore" && entry.stage === "unfinished")) return "busy";
  return entry.purpose;
}

/** Pure: the table's cell for a verb and an entry, `own space` settled against the verb's space. */
export function journalDecision(entry: JournalEntry, policy: JournalPolicy, owner: OwnerState): "proceed" | "journal-blocked" | "lock-held" {
  const cell: JournalDecision = JOURNAL_POLICY[policy.verb][journalEntryKind(entry, owner)];
  if (cell !== "own space") return cell;
  return "space" in policy && policy.space === entry.space ? P : JB;
}

/** Pure: the refusal a journal entry makes for a verb, or undefined when the verb may proceed. */
export function journalRefusal(entry: JournalEntry | undefined, policy: JournalPolicy, owner: OwnerState = "dead"): CotalError | undefined {
  if (!entry || journalDecision(entry, policy, owner) === P) return undefined;
  return refusalFor(entry, journalVerbSays(policy), owner);
}

/** The refusal an entry makes, by its kind: a busy owner is waited for (`lock-held`), anything else names its way out. */
function refusalFor(entry: JournalEntry, verb: string, owner: OwnerState): CotalError {
  if (entry.op === "quiesce") return quiesceRefusal(entry, verb, owner);
  if (entry.op === "rotate-sys") {
    return new CotalError("journal-blocked", `a system-account rotation to generation ${entry.generation} (started ${entry.startedAt}) is unfinished; ${verb} waits for it`, {
      next: "cotal up --rotate-sys   # re-running it finishes the rotation",
      details: { journal: entry },
    });
  }
  if (entry.op === "cut") {
    return new CotalError("journal-blocked", `a preserve-state cut (${entry.cutId}, ${entry.state}) holds the store; ${verb} waits for the broker to resume it`, {
      next: "cotal up   # resumes the preserved store and clears the cut",
      details: { journal: entry },
    });
  }
  return new CotalError("journal-blocked", `a removal of space ${entry.space} (started ${entry.startedAt}${entry.streamsDeleted ? ", its streams already deleted" : ""}) is unfinished; ${verb} waits for it`, {
    next: `cotal space rm ${entry.space} --yes   # re-running it finishes the removal`,
    details: { journal: entry },
  });
}

/** A quiesce's refusal: a busy owner is waited for; a stopped restore names its re-run, a stopped backup the `up` that lifts it. */
function quiesceRefusal(entry: QuiesceEntry, verb: string, owner: OwnerState): CotalError {
  if (journalEntryKind(entry, owner) === "busy") {
    // A running backup or restore is busy, not broken: its owner lifts the quiesce itself.
    return new CotalError("lock-held", `an online ${entry.purpose} of space ${entry.space} (pid ${entry.owner.pid} on ${entry.owner.host}, ${entry.stage} since ${entry.startedAt}) holds the tenant quiesced; ${verb} waits for it`, {
      next: afterPid(entry.owner.pid),
      details: { journal: entry, owner },
    });
  }
  if (entry.purpose === "restore") {
    return new CotalError("journal-blocked", `an online restore of space ${entry.space} from ${entry.out} (started ${entry.startedAt}) is unfinished (${entry.stage}); ${verb} waits for it`, {
      next: `${restoreRerun(entry)}   # re-running it finishes the restore`,
      details: { journal: entry },
    });
  }
  return new CotalError("journal-blocked", `an online backup of space ${entry.space} (started ${entry.startedAt}) stopped while the tenant was quiesced (${entry.stage}); ${verb} waits for the lift`, {
    next: "cotal up   # lifts the quiesce and removes a partial artifact",
    details: { journal: entry },
  });
}

/** Reads the journal and refuses as `journalRefusal` says; an unreadable journal refuses every verb. */
export function assertJournalAllows(layout: RootLayout, policy: JournalPolicy, guards: Guards = GUARDS_ON): JournalEntry | undefined {
  const entry = readJournal(layout);
  // Only a quiesce has an owner to ask; every other entry is judged as the default (dead) says.
  const refusal = guards.IGNORE_JOURNAL ? undefined : journalRefusal(entry, policy, entry?.op === "quiesce" ? ownerStatus(entry.owner) : undefined);
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
