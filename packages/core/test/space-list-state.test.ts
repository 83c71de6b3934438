import { describe, expect, it } from "vitest";
import { quiescedTenants, spaceListFrom, type JournalEntry, type StatusReport } from "../src/internal.js";

const OWNER = { pid: 999_999, host: "h" };

/** A running broker serving alpha, beta and gamma, with the given journal entry and JWT revocations. */
function report(journal: JournalEntry | null, revokedOnDisk: string[] = []): StatusReport {
  const names = ["alpha", "beta", "gamma"];
  return {
    root: "/r",
    exists: true,
    state: "clean",
    why: "",
    broker: { running: true, staleRuntime: false, strays: [] },
    spaces: names.map((name) => ({ name, publicKey: `A${name}`, inConfig: true })),
    corrupt: [],
    inventory: { spaces: names, generation: 3, revision: 7 },
    diskOnly: [],
    kvOnly: [],
    configOnly: [],
    journal,
    provisioningOwed: [],
    lock: null,
    quiesced: quiescedTenants(journal, revokedOnDisk.map((space) => ({ space, revokeAllBefore: 1 }))),
  } as unknown as StatusReport;
}

const states = (s: StatusReport): Record<string, string> => Object.fromEntries(spaceListFrom(s).spaces.map((x) => [x.name, x.state]));

describe("space list state of a tenant under maintenance", () => {
  it("every tenant is active without a journal entry or a revocation (positive control)", () => {
    expect(states(report(null))).toEqual({ alpha: "active", beta: "active", gamma: "active" });
  });

  it("a standing space-rm entry makes its tenant removing, and only it", () => {
    const rm: JournalEntry = { op: "space-rm", space: "beta", startedAt: "t" };
    expect(states(report(rm))).toEqual({ alpha: "active", beta: "removing", gamma: "active" });
    expect(states(report({ ...rm, streamsDeleted: true })).beta).toBe("removing");
  });

  it("a quiesce entry, or a JWT revoking every user, makes the tenant quiesced", () => {
    const q: JournalEntry = { op: "quiesce", space: "alpha", purpose: "backup", out: "/b", attemptId: "a1", owner: OWNER, startedAt: "t", stage: "journaled" };
    expect(states(report(q))).toEqual({ alpha: "quiesced", beta: "active", gamma: "active" });
    expect(states(report(null, ["gamma"]))).toEqual({ alpha: "active", beta: "active", gamma: "quiesced" });
    expect(states(report(q, ["alpha", "gamma"]))).toEqual({ alpha: "quiesced", beta: "active", gamma: "quiesced" });
  });

  it("an unfinished restore's entry (already lifted) leaves its tenant as it otherwise stands", () => {
    const q: JournalEntry = { op: "quiesce", space: "alpha", purpose: "restore", out: "/b", attemptId: "a1", owner: OWNER, startedAt: "t", stage: "unfinished" };
    expect(states(report(q)).alpha).toBe("active");
  });

  it("removing wins over a pending removal claim; other journal entries change nothing", () => {
    const s = report({ op: "space-rm", space: "beta", startedAt: "t" });
    (s.inventory as { pending?: unknown }).pending = { op: "remove", adds: [], removes: ["beta"] };
    expect(states(s).beta).toBe("removing");
    expect(states(report({ op: "rotate-sys", generation: 2, startedAt: "t" } as JournalEntry))).toEqual({ alpha: "active", beta: "active", gamma: "active" });
  });
});
