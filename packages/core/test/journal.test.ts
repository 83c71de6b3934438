import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  acquireMaintenanceLock,
  assertJournalAllows,
  clearJournal,
  journalRefusal,
  readJournal,
  releaseMaintenanceLock,
  RootLayout,
  CotalError,
  writeJournal,
  type CutEntry,
  type JournalEntry,
  type QuiesceEntry,
  type SpaceRmEntry,
} from "../src/internal.js";
import { attemptWorkDir, journaledAttemptDir, journalVerbSays, readCut, type JournalPolicy } from "../src/journal/journal.js";
import { selfOwner } from "../src/lock/process-identity.js";
import { refusalOf } from "./fixtures/records.js";
import { GUARDS_ON } from "../src/guards.js";

// The maintenance journal (docs/refusals.md, "the journal blocks the root"): a standing entry
// blocks every verb but its own; an unreadable one blocks all of them.
const fresh = () => {
  const root = mkdtempSync(join(tmpdir(), "cotal-journal-"));
  const layout = new RootLayout(root);
  mkdirSync(layout.maintenanceDir, { recursive: true, mode: 0o700 });
  return { root, layout };
};
const rm: SpaceRmEntry = { op: "space-rm", space: "beta", startedAt: "2026-01-01T00:00:00.000Z" };
const cut: CutEntry = { op: "cut", state: "ready", cutId: "c1", startedAt: "2026-01-01T00:00:00.000Z" };


describe("readJournal", () => {
  it("is undefined without a journal file", () => {
    expect(readJournal(fresh().layout)).toBeUndefined();
  });

  it.each<[string, JournalEntry]>([
    ["a removal", rm],
    ["a removal past its commit point", { ...rm, streamsDeleted: true }],
    ...(["cut-intent", "cut-committed", "ready", "resume-intent"] as const).map((state): [string, JournalEntry] => [`a cut in ${state}`, { ...cut, state }]),
  ])("reads %s back as written", (_what, entry) => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, JSON.stringify(entry));
    expect(readJournal(layout)).toEqual(entry);
  });

  it.each([
    ["not JSON", "{"],
    ["JSON null", "null"],
    ["an unknown op", JSON.stringify({ op: "space-add", space: "beta" })],
    ["an unknown op shaped like a cut", JSON.stringify({ ...cut, op: "snapshot" })],
    ["a removal of an invalid name that also looks like a cut", JSON.stringify({ ...cut, op: "space-rm", space: "Bad" })],
    ["a removal without a space", JSON.stringify({ op: "space-rm" })],
    ["a removal of a numeric space", JSON.stringify({ op: "space-rm", space: 5 })],
    ["a removal of an invalid space name", JSON.stringify({ op: "space-rm", space: "../etc" })],
    ["a cut in an unknown state", JSON.stringify({ ...cut, state: "paused" })],
    ["a cut without an id", JSON.stringify({ op: "cut", state: "ready" })],
    ["a cut with a numeric id", JSON.stringify({ ...cut, cutId: 1 })],
  ])("refuses %s as corrupt, naming the file and the way out", (_what, text) => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, text);
    const e = refusalOf(() => readJournal(layout));
    expect(e.code).toBe("corrupt-record");
    expect(e.message).toBe(`${layout.journalFile} is unreadable; a destructive operation may be half done`);
    expect(e.next).toBe(`cat ${layout.journalFile}   # if it names a space, re-run cotal space rm with it and --yes; otherwise move the file aside`);
  });

  it("refuses a journal it cannot read at all (not a file) as corrupt, with the OS reason", () => {
    const { layout } = fresh();
    mkdirSync(layout.journalFile);
    const e = refusalOf(() => readJournal(layout));
    expect(e.code).toBe("corrupt-record");
    expect(e.message).toMatch(new RegExp(`^${layout.journalFile.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} cannot be read \\(EISDIR.*\\); a destructive operation may be half done$`));
    expect(e.next).toBe(`cat ${layout.journalFile}   # if it names a space, re-run cotal space rm with it and --yes; otherwise move the file aside`);
  });
});

describe("writeJournal / clearJournal", () => {
  it("write under the held lock, atomically and private; clear removes the entry", () => {
    const { root, layout } = fresh();
    const lock = acquireMaintenanceLock(root, "test");
    try {
      writeJournal(layout, lock, rm);
      expect(JSON.parse(readFileSync(layout.journalFile, "utf8"))).toEqual(rm);
      expect(statSync(layout.journalFile).mode & 0o777).toBe(0o600);
      expect(readJournal(layout)).toEqual(rm);
      clearJournal(layout, lock);
      expect(existsSync(layout.journalFile)).toBe(false);
      clearJournal(layout, lock); // clearing twice is fine
    } finally {
      releaseMaintenanceLock(lock);
    }
  });

  it("refuse when the caller's lock is no longer held, and change nothing", () => {
    const { root, layout } = fresh();
    const lock = acquireMaintenanceLock(root, "test");
    writeJournal(layout, lock, rm);
    releaseMaintenanceLock(lock);
    expect(refusalOf(() => writeJournal(layout, lock, cut)).code).toBe("lock-lost");
    expect(refusalOf(() => clearJournal(layout, lock)).code).toBe("lock-lost");
    expect(readJournal(layout)).toEqual(rm);
  });
});

describe("journalRefusal", () => {
  it("nothing journaled: every verb proceeds", () => {
    expect(journalRefusal(undefined, { verb: "space add" })).toBeUndefined();
  });

  it("a cut blocks every verb but the cut's own, and says how it resumes", () => {
    expect(journalRefusal(cut, { verb: "up" })).toBeUndefined();
    for (const policy of [{ verb: "space add" }, { verb: "space rm", space: "beta" }, { verb: "broker reconcile", says: "reconcile" }] satisfies JournalPolicy[]) {
      const e = journalRefusal(cut, policy) as CotalError;
      expect(e.code).toBe("journal-blocked");
      expect(e.message).toBe(`a preserve-state cut (c1, ready) holds the store; ${journalVerbSays(policy)} waits for the broker to resume it`);
      expect(e.next).toBe("cotal up   # resumes the preserved store and clears the cut");
      expect(e.details).toEqual({ journal: cut });
    }
  });

  it("a removal passes only its own re-run (and reconcile), and names the re-run as the way out", () => {
    expect(journalRefusal(rm, { verb: "space rm", space: "beta" })).toBeUndefined();
    expect(journalRefusal(rm, { verb: "broker reconcile", says: "reconcile" })).toBeUndefined();
    for (const policy of [{ verb: "space add" }, { verb: "space rm", space: "gamma" }, { verb: "up" }] satisfies JournalPolicy[]) {
      const e = journalRefusal(rm, policy) as CotalError;
      expect(e.code).toBe("journal-blocked");
      expect(e.message).toBe(`a removal of space beta (started ${rm.startedAt}) is unfinished; ${journalVerbSays(policy)} waits for it`);
      expect(e.next).toBe("cotal space rm beta --yes   # re-running it finishes the removal");
      expect(e.details).toEqual({ journal: rm });
    }
  });

  it("`down` passes every entry: stopping is the way out of each, and each resumes from disk", () => {
    for (const entry of [cut, rm, { ...rm, streamsDeleted: true }]) expect(journalRefusal(entry, { verb: "down" })).toBeUndefined();
    expect(journalRefusal(rm, { verb: "down --preserve-state" })?.code).toBe("journal-blocked");
  });

  it("a removal past its commit point says its streams are gone", () => {
    const e = journalRefusal({ ...rm, streamsDeleted: true }, { verb: "space add" }) as CotalError;
    expect(e.message).toBe(`a removal of space beta (started ${rm.startedAt}, its streams already deleted) is unfinished; space add waits for it`);
  });
});

describe("assertJournalAllows", () => {
  it("returns the entry a verb may proceed over, and throws the refusal otherwise", () => {
    const { layout } = fresh();
    expect(assertJournalAllows(layout, { verb: "space add" })).toBeUndefined();
    writeFileSync(layout.journalFile, JSON.stringify(rm));
    expect(assertJournalAllows(layout, { verb: "space rm", space: "beta" })).toEqual(rm);
    expect(refusalOf(() => assertJournalAllows(layout, { verb: "space add" })).code).toBe("journal-blocked");
  });

  it("the IGNORE_JOURNAL test switch lets a blocked verb through; an unreadable journal still refuses", () => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, JSON.stringify(rm));
    const ignoring = { ...GUARDS_ON, IGNORE_JOURNAL: true };
    expect(assertJournalAllows(layout, { verb: "space add" }, ignoring)).toEqual(rm);
    writeFileSync(layout.journalFile, "{");
    expect(refusalOf(() => assertJournalAllows(layout, { verb: "space add" }, ignoring)).code).toBe("corrupt-record");
  });
});

describe("the rotation journal (up --rotate-sys)", () => {
  const rot: JournalEntry = { op: "rotate-sys", generation: 3, startedAt: "2026-01-01T00:00:00.000Z" };

  it("blocks every verb but the rotation's own re-run, naming it with the generation", () => {
    const e = journalRefusal(rot, { verb: "space add" }) as CotalError;
    expect(e.code).toBe("journal-blocked");
    expect(e.message).toBe("a system-account rotation to generation 3 (started 2026-01-01T00:00:00.000Z) is unfinished; space add waits for it");
    expect(e.next).toBe("cotal up --rotate-sys   # re-running it finishes the rotation");
    expect(e.details).toEqual({ journal: rot });
    expect(journalRefusal(rot, { verb: "up --rotate-sys" })).toBeUndefined();
    // neither a cut's nor a removal's permission lets a rotation through
    expect(journalRefusal(rot, { verb: "down --preserve-state" })?.code).toBe("journal-blocked");
    expect(journalRefusal(rot, { verb: "broker reconcile" })?.code).toBe("journal-blocked");
  });

  it("a rotation's permission lets no removal or cut through", () => {
    expect(journalRefusal(rm, { verb: "up --rotate-sys" })?.code).toBe("journal-blocked");
    expect(journalRefusal(cut, { verb: "up --rotate-sys" })?.code).toBe("journal-blocked");
    expect(journalRefusal(rm, { verb: "broker reconcile" })).toBeUndefined();
  });

  it("is read back only with an integer generation; anything else refuses as unreadable", () => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, JSON.stringify(rot));
    expect(readJournal(layout)).toEqual(rot);
    for (const bad of [{ op: "rotate-sys", startedAt: "t" }, { op: "rotate-sys", generation: "3" }, { op: "rotate-sys", generation: 2.5 }, { op: "rotate", generation: 3 }]) {
      writeFileSync(layout.journalFile, JSON.stringify(bad));
      expect(refusalOf(() => readJournal(layout)).code, JSON.stringify(bad)).toBe("corrupt-record");
    }
  });
});

describe("quiesce entries (online backup and restore)", () => {
  const owner = { pid: 4242, host: "h1", startedAt: "s" } as QuiesceEntry["owner"];
  const q: QuiesceEntry = { op: "quiesce", space: "alpha", purpose: "backup", out: "/b/alpha", attemptId: "a1", owner, startedAt: "2026-01-01T00:00:00.000Z", stage: "journaled" };
  const STAGES: QuiesceEntry["stage"][] = ["journaled", "quiesced", "snapshotting", "published", "lifting", "deleting", "restoring", "verified", "unfinished"];

  it.each(STAGES)("reads a quiesce in stage %s back as written", (stage) => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, JSON.stringify({ ...q, stage }));
    expect(readJournal(layout)).toEqual({ ...q, stage });
  });

  it.each([
    ["an unknown stage", { ...q, stage: "paused" }],
    ["an empty stage", { ...q, stage: "" }],
    ["an unknown purpose", { ...q, purpose: "copy" }],
    ["no out", { ...q, out: undefined }],
    ["no attempt id", { ...q, attemptId: 7 }],
    ["an owner without a pid", { ...q, owner: { host: "h1" } }],
    ["an invalid space", { ...q, space: "Bad Name" }],
  ])("refuses a quiesce with %s as corrupt", (_what, entry) => {
    const { layout } = fresh();
    writeFileSync(layout.journalFile, JSON.stringify(entry));
    expect(refusalOf(() => readJournal(layout)).code).toBe("corrupt-record");
  });

  it("a running restore is busy (lock-held, wait for its pid); a dead one blocks naming its re-run", () => {
    const r: QuiesceEntry = { ...q, purpose: "restore", stage: "restoring", out: "/b/alpha.bak", replace: { streams: [], deletionBegan: false } } as QuiesceEntry;
    const busy = journalRefusal(r, { verb: "space add" }, "alive") as CotalError;
    expect(busy.code).toBe("lock-held");
    expect(busy.message).toBe("an online restore of space alpha (pid 4242 on h1, restoring since 2026-01-01T00:00:00.000Z) holds the tenant quiesced; space add waits for it");
    expect(busy.next).toBe("while kill -0 4242 2>/dev/null; do sleep 1; done; {rerun}");
    expect(busy.details).toEqual({ journal: r, owner: "alive" });
    const dead = journalRefusal(r, { verb: "space add" }) as CotalError;
    expect(dead.code).toBe("journal-blocked");
    expect(dead.message).toBe("an online restore of space alpha from /b/alpha.bak (started 2026-01-01T00:00:00.000Z) is unfinished (restoring); space add waits for it");
    expect(dead.details).toEqual({ journal: r });
    // only a restore is judged as one: a backup entry in the same stage is a backup's refusal
    expect((journalRefusal({ ...r, purpose: "backup" }, { verb: "space add" }) as CotalError).message).toMatch(/^an online backup of space alpha/);
  });

  it("a running backup is busy (lock-held); a dead one blocks until `cotal up` lifts it", () => {
    const busy = journalRefusal(q, { verb: "space rm", space: "alpha" }, "unknown") as CotalError;
    expect(busy.code).toBe("lock-held");
    expect(busy.message).toBe("an online backup of space alpha (pid 4242 on h1, journaled since 2026-01-01T00:00:00.000Z) holds the tenant quiesced; space rm waits for it");
    expect(busy.details).toEqual({ journal: q, owner: "unknown" });
    const dead = journalRefusal(q, { verb: "space rm", space: "alpha" }) as CotalError;
    expect(dead.code).toBe("journal-blocked");
    expect(dead.details).toEqual({ journal: q });
    expect(dead.next).toBe("cotal up   # lifts the quiesce and removes a partial artifact");
  });

  it("assertJournalAllows judges a quiesce's owner by its process: our own live pid is busy, a cut's owner is never asked", () => {
    const { layout } = fresh();
    const lock = acquireMaintenanceLock(layout.root, "test", GUARDS_ON);
    try {
      writeJournal(layout, lock, { ...q, owner: { ...selfOwner() } });
      expect(refusalOf(() => assertJournalAllows(layout, { verb: "space add" })).code).toBe("lock-held");
      writeJournal(layout, lock, cut);
      expect(refusalOf(() => assertJournalAllows(layout, { verb: "space add" })).code).toBe("journal-blocked");
    } finally {
      releaseMaintenanceLock(lock);
    }
  });
});

describe("the cut and its attempt dir", () => {
  it("readCut is the cut entry only; journaledAttemptDir names its attempt's work dir, undefined without one, null when unreadable", () => {
    const { layout } = fresh();
    expect(readCut(layout)).toBeUndefined();
    expect(journaledAttemptDir(layout)).toBeUndefined();
    writeFileSync(layout.journalFile, JSON.stringify(rm));
    expect(readCut(layout)).toBeUndefined();
    expect(journaledAttemptDir(layout)).toBeUndefined();
    writeFileSync(layout.journalFile, JSON.stringify(cut));
    expect(readCut(layout)).toEqual(cut);
    expect(journaledAttemptDir(layout)).toBeUndefined();
    const withAttempt = { ...cut, attempt: { id: "20260101-ab", kind: "backup", space: "beta", stage: "work", owner: { pid: 1, host: "h", startedAt: "s" }, owned: [] } };
    writeFileSync(layout.journalFile, JSON.stringify(withAttempt));
    expect(journaledAttemptDir(layout)).toBe(join(layout.maintenanceDir, "attempt-20260101-ab"));
    expect(attemptWorkDir(layout, "x")).toBe(join(layout.maintenanceDir, "attempt-x"));
    writeFileSync(layout.journalFile, "{");
    expect(journaledAttemptDir(layout)).toBeNull();
  });
});
