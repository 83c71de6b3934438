import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { journalRefusal, quiescedTenants, readJournal, restoreRerun, RootLayout, type JournalPolicy, type QuiesceEntry, type CotalError } from "../src/internal.js";

// The online backup's quiesce entry (docs/resume.md, "the quiesce entry"; docs/refusals.md).
const entry: QuiesceEntry = {
  op: "quiesce",
  space: "alpha",
  purpose: "backup",
  out: "/tmp/alpha.bak",
  attemptId: "20260101000000-abcd0123",
  owner: { pid: 4242, host: "h" },
  startedAt: "2026-01-01T00:00:00.000Z",
  stage: "snapshotting",
};

describe("the quiesce entry", () => {
  it("reads back as written; a bad stage or space is corrupt", () => {
    const root = mkdtempSync(join(tmpdir(), "cotal-quiesce-"));
    const layout = new RootLayout(root);
    mkdirSync(layout.maintenanceDir, { recursive: true });
    writeFileSync(layout.journalFile, JSON.stringify(entry));
    expect(readJournal(layout)).toEqual(entry);
    for (const bad of [{ ...entry, stage: "paused" }, { ...entry, space: "../x" }, { ...entry, out: 3 }, { ...entry, owner: {} }]) {
      writeFileSync(layout.journalFile, JSON.stringify(bad));
      expect(() => readJournal(layout)).toThrow(/unreadable/);
    }
  });

  it("a dead owner's entry blocks every verb but up and space backup, naming `cotal up`", () => {
    expect(journalRefusal(entry, { verb: "up" }, "dead")).toBeUndefined();
    for (const policy of [{ verb: "space add" }, { verb: "space rm", space: "beta", says: "space rm beta" }, { verb: "broker reconcile" }, { verb: "up --rotate-sys" }, { verb: "down --preserve-state" }] satisfies JournalPolicy[]) {
      const e = journalRefusal(entry, policy, "dead") as CotalError;
      expect(e.code).toBe("journal-blocked");
      expect(e.next).toMatch(/^cotal up /);
      expect(e.message).toContain("space alpha");
    }
  });

  it("a live (or another host's) owner is busy for every verb, the backup's own re-run included", () => {
    for (const owner of ["alive", "unknown"] as const) {
      for (const policy of [{ verb: "up" }, { verb: "space add" }] satisfies JournalPolicy[]) {
        const e = journalRefusal(entry, policy, owner) as CotalError;
        expect(e.code).toBe("lock-held");
        expect(e.next).toBe("while kill -0 4242 2>/dev/null; do sleep 1; done; {rerun}");
      }
    }
  });
});

describe("quiescedTenants", () => {
  it("joins the entry and the JWTs: both, entry only, JWT only; the next names up unless the owner runs", () => {
    expect(quiescedTenants(null, [])).toEqual([]);
    expect(quiescedTenants(entry, [{ space: "alpha", revokeAllBefore: 10 }], "alive")).toEqual([
      expect.objectContaining({ space: "alpha", source: "both", revokeAllBefore: 10, stage: "snapshotting", next: expect.stringMatching(/^while kill -0 4242 2>\/dev\/null; do sleep 1; done; cotal status/) }),
    ]);
    expect(quiescedTenants(entry, [], "dead")).toEqual([expect.objectContaining({ space: "alpha", source: "journal", next: expect.stringMatching(/^cotal up/) })]);
    const stray = quiescedTenants(null, [{ space: "beta", revokeAllBefore: 7 }]);
    expect(stray).toEqual([{ space: "beta", source: "jwt", revokeAllBefore: 7, next: "cotal up   # lifts it" }]);
  });
});

// The online restore's entry (backup/online-restore.ts): the same op, purpose "restore".
const restoring: QuiesceEntry = { ...entry, purpose: "restore", out: "/tmp/alpha.bak", streams: ["cotal_events_alpha"], stage: "restoring", replace: { streams: ["cotal_events_alpha"], deletionBegan: true } };

describe("the restore's quiesce entry", () => {
  it("a dead owner's entry passes up and the re-run of that space's restore only; every other verb is told the re-run", () => {
    expect(journalRefusal(restoring, { verb: "up" }, "dead")).toBeUndefined();
    expect(journalRefusal(restoring, { verb: "space restore", space: "alpha" }, "dead")).toBeUndefined();
    for (const policy of [{ verb: "space add" }, { verb: "space backup" }, { verb: "space restore", space: "beta" }] satisfies JournalPolicy[]) {
      const e = journalRefusal(restoring, policy, "dead") as CotalError;
      expect(e.code).toBe("journal-blocked");
      expect(e.next).toMatch(/^cotal space restore alpha --from \/tmp\/alpha\.bak --replace --yes /);
    }
    // a dead backup's entry lets a restore through (it lifts it first)
    expect(journalRefusal(entry, { verb: "space restore", space: "beta" }, "dead")).toBeUndefined();
  });

  it("a running restore is busy, its own re-run included; the unfinished stage (lifted by up) is not", () => {
    const e = journalRefusal(restoring, { verb: "space restore", space: "alpha" }, "alive") as CotalError;
    expect(e.code).toBe("lock-held");
    expect(journalRefusal({ ...restoring, stage: "unfinished" }, { verb: "space restore", space: "alpha" }, "alive")).toBeUndefined();
  });

  it("restoreRerun carries the flags; status lists an unfinished restore as not quiesced", () => {
    expect(restoreRerun({ ...restoring, replace: undefined, rebindAccount: true })).toBe("cotal space restore alpha --from /tmp/alpha.bak --rebind-account");
    expect(quiescedTenants(restoring, [], "dead")).toEqual([expect.objectContaining({ space: "alpha", next: expect.stringMatching(/^cotal space restore alpha --from \/tmp\/alpha\.bak --replace --yes/) })]);
    expect(quiescedTenants({ ...restoring, stage: "unfinished" }, [], "dead")).toEqual([]);
  });

  it("reads back as written; an unknown purpose is corrupt", () => {
    const root = mkdtempSync(join(tmpdir(), "cotal-quiesce-"));
    const layout = new RootLayout(root);
    mkdirSync(layout.maintenanceDir, { recursive: true });
    writeFileSync(layout.journalFile, JSON.stringify(restoring));
    expect(readJournal(layout)).toEqual(restoring);
    writeFileSync(layout.journalFile, JSON.stringify({ ...restoring, purpose: "copy" }));
    expect(() => readJournal(layout)).toThrow(/unreadable/);
  });
});
