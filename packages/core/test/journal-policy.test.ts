import { describe, expect, it } from "vitest";
import { JOURNAL_POLICY, journalDecision, journalEntryKind, journalRefusal, journalVerbSays, type JournalEntry, type JournalEntryKind, type JournalPolicy, type JournalVerb, type OwnerState, type QuiesceEntry } from "../src/journal/journal.js";

// The journal's verb × entry policy (journal/journal.ts JOURNAL_POLICY; docs/refusals.md, "the journal
// blocks the root"), walked cell by cell against the matrix below, written out by hand.
// P: proceeds; own: proceeds over its own space's entry only; JB: journal-blocked; LH: lock-held.
//                                                                     removal cut rotation backup restore busy
const EXPECTED: Record<JournalVerb, { says: string; row: string }> = {
  "space add":                  { says: "space add",             row: "JB      JB  JB       JB     JB      LH" },
  "space limits":               { says: "space limits",          row: "JB      JB  JB       JB     JB      LH" },
  "space revoke":               { says: "space revoke",          row: "JB      JB  JB       JB     JB      LH" },
  "space rotate-key":           { says: "space rotate-key",      row: "JB      JB  JB       JB     JB      LH" },
  "space creds":                { says: "space creds",           row: "JB      P   JB       JB     JB      LH" },
  "space rm":                   { says: "space rm",              row: "own     JB  JB       JB     JB      LH" },
  "space backup":               { says: "space backup",          row: "JB      JB  JB       P      JB      LH" },
  "space backup offline":       { says: "space backup",          row: "JB      P   JB       JB     JB      LH" },
  "space restore":              { says: "space restore",         row: "JB      JB  JB       P      own     LH" },
  "space restore offline":      { says: "space restore",         row: "JB      P   JB       JB     JB      LH" },
  up:                           { says: "up",                    row: "JB      P   JB       P      P       LH" },
  "up cluster":                 { says: "up",                    row: "P       P   JB       P      P       LH" },
  "up --rotate-sys":            { says: "up --rotate-sys",       row: "JB      JB  P        JB     JB      LH" },
  down:                         { says: "down",                  row: "P       P   P        P      P       P" },
  "down --preserve-state":      { says: "down --preserve-state", row: "JB      P   JB       JB     JB      LH" },
  "broker reconcile":           { says: "broker reconcile",      row: "P       JB  JB       JB     JB      LH" },
  "broker reconcile resumable": { says: "broker reconcile",      row: "JB      JB  JB       JB     JB      LH" },
  "clean restore-attempt":      { says: "clean restore-attempt", row: "JB      P   JB       JB     JB      LH" },
  "clean orphan-streams":       { says: "clean orphan-streams",  row: "JB      P   JB       JB     JB      LH" },
  status:                       { says: "every mutating verb",   row: "JB      JB  JB       JB     JB      LH" },
};
const KINDS: JournalEntryKind[] = ["removal", "cut", "rotation", "backup", "restore", "busy"];

const owner = { pid: 4242, host: "h1", startedAt: "s" } as QuiesceEntry["owner"];
const backup: QuiesceEntry = { op: "quiesce", space: "beta", purpose: "backup", out: "/b/beta", attemptId: "a1", owner, startedAt: "2026-01-01T00:00:00.000Z", stage: "snapshotting" };
const restore: QuiesceEntry = { ...backup, purpose: "restore", out: "/b/beta.bak", stage: "restoring" };
/** Every entry of a kind, with the owner states it is that kind under. */
const SAMPLES: Record<JournalEntryKind, [JournalEntry, OwnerState][]> = {
  removal: [[{ op: "space-rm", space: "beta", startedAt: "2026-01-01T00:00:00.000Z" }, "dead"], [{ op: "space-rm", space: "beta", startedAt: "t", streamsDeleted: true }, "alive"]],
  cut: [[{ op: "cut", state: "ready", cutId: "c1", startedAt: "t" }, "dead"], [{ op: "cut", state: "cut-intent", cutId: "c1", startedAt: "t" }, "unknown"]],
  rotation: [[{ op: "rotate-sys", generation: 3, startedAt: "t" }, "dead"], [{ op: "rotate-sys", generation: 3, startedAt: "t" }, "alive"]],
  backup: [[backup, "dead"], [{ ...backup, stage: "lifting" as const }, "dead"]],
  // an `unfinished` restore has been lifted by `up`: its live owner does not make it busy
  restore: [[restore, "dead"], [{ ...restore, stage: "unfinished" as const }, "alive"], [{ ...restore, stage: "unfinished" as const }, "unknown"]],
  busy: [[backup, "alive"], [backup, "unknown"], [{ ...backup, stage: "unfinished" as const }, "alive"], [restore, "alive"], [{ ...restore, stage: "verified" as const }, "unknown"]],
};

/** The policies a verb is asked with: a space verb once over its own space's entry, once over another's. */
function policiesOf(verb: JournalVerb): { policy: JournalPolicy; own: boolean }[] {
  if (verb === "space rm" || verb === "space restore") return [{ policy: { verb, space: "beta" }, own: true }, { policy: { verb, space: "gamma" }, own: false }];
  return [{ policy: { verb }, own: false }];
}

function expected(cell: string, own: boolean): "proceed" | "journal-blocked" | "lock-held" {
  if (cell === "P") return "proceed";
  if (cell === "own") return own ? "proceed" : "journal-blocked";
  if (cell === "JB") return "journal-blocked";
  if (cell === "LH") return "lock-held";
  throw new Error(`no such cell ${cell}`);
}

describe("the journal's verb × entry policy", () => {
  it("has a row for every verb of the matrix, and no other", () => {
    expect(Object.keys(JOURNAL_POLICY).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it("judges each sample entry as its kind", () => {
    for (const kind of KINDS) for (const [entry, state] of SAMPLES[kind]) expect(journalEntryKind(entry, state), `${JSON.stringify(entry)} ${state}`).toBe(kind);
  });

  describe.each(Object.keys(EXPECTED) as JournalVerb[])("%s", (verb) => {
    const { says, row } = EXPECTED[verb];
    const cells = row.split(/\s+/);

    it("is named as the matrix says, and a caller's own name wins", () => {
      expect(cells).toHaveLength(KINDS.length);
      expect(journalVerbSays(policiesOf(verb)[0]!.policy)).toBe(says);
      expect(journalVerbSays({ ...policiesOf(verb)[0]!.policy, says: "cotal x" })).toBe("cotal x");
    });

    it.each(KINDS.map((kind, i) => [kind, i] as const))("over a %s entry decides as the matrix says", (kind, i) => {
      for (const { policy, own } of policiesOf(verb)) {
        for (const [entry, state] of SAMPLES[kind]) {
          const want = expected(cells[i]!, own);
          const what = `${verb}${"space" in policy ? ` ${policy.space}` : ""} over ${JSON.stringify(entry)} (owner ${state})`;
          expect(journalDecision(entry, policy, state), what).toBe(want);
          const refusal = journalRefusal(entry, policy, state);
          expect(refusal?.code ?? "proceed", what).toBe(want);
          if (refusal) expect(refusal.message, what).toMatch(new RegExp(`; ${says.replace(/-/g, "\\-")} waits for `));
          if (refusal) expect(refusal.details, what).toEqual(state === "dead" || want === "journal-blocked" ? { journal: entry } : { journal: entry, owner: state });
        }
      }
    });
  });

  it("nothing journaled: every verb proceeds", () => {
    for (const verb of Object.keys(EXPECTED) as JournalVerb[]) for (const { policy } of policiesOf(verb)) expect(journalRefusal(undefined, policy, "alive")).toBeUndefined();
  });
});
