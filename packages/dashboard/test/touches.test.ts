import { describe, expect, it } from "vitest";
import type { StatusReport } from "@cotal/core";
import { touchesOf } from "../src/tenant-detail.js";

function status(over: Partial<StatusReport> = {}): StatusReport {
  return { root: "/r", exists: true, state: "clean", why: "", broker: { running: true, staleRuntime: false, strays: [] }, spaces: [], corrupt: [], inventory: null, diskOnly: [], kvOnly: [], configOnly: [], journal: null, provisioningOwed: [], lock: null, quiesced: [], ...over } as StatusReport;
}

describe("what holds one tenant", () => {
  it("a standing space rm of this space, not of another", () => {
    const s = status({ journal: { op: "space-rm", space: "beta", startedAt: "t" } as StatusReport["journal"] });
    expect(touchesOf(s, "beta")).toEqual([{ text: "journal: space-rm beta since t: re-run the removal", severity: "block" }]);
    expect(touchesOf(s, "alpha")).toEqual([]);
  });

  it("a quiesce with its owner's state and next; a live owner is amber, a dead one red", () => {
    const q = { space: "alpha", source: "both" as const, stage: "journaled", attemptId: "a1", owner: { pid: 7, host: "h", status: "dead" as const }, next: "cotal --root /r up" };
    expect(touchesOf(status({ quiesced: [q] }), "alpha")).toEqual([{ text: "quiesced (both, journaled, pid 7 dead): its clients are refused until the lift", severity: "block", next: "cotal --root /r up" }]);
    expect(touchesOf(status({ quiesced: [{ ...q, owner: { ...q.owner, status: "alive" } }] }), "alpha")[0]?.severity).toBe("warn");
    // its journal entry too: busy while the owner runs, blocking once it is gone
    const journal = { op: "quiesce", space: "alpha", purpose: "backup", out: "/b", attemptId: "a1", owner: { pid: 7, host: "h" }, startedAt: "t", stage: "journaled" } as StatusReport["journal"];
    expect(touchesOf(status({ journal, quiesced: [q] }), "alpha")[0]).toEqual({ text: "journal: quiesce of space alpha by online backup a1 (journaled) since t; its owner (pid 7) is gone", severity: "block" });
    expect(touchesOf(status({ journal, quiesced: [{ ...q, owner: { ...q.owner, status: "alive" } }] }), "alpha")[0]?.severity).toBe("warn");
  });

  it("a pending claim that adds it, the lock whose purpose names it as a word, owed provisioning", () => {
    const s = status({
      inventory: { pending: { generation: 3, op: "add", adds: ["alpha"], removes: [], nextSpaces: [], writer: "w", leaseId: "l", claimedAt: "t" } } as unknown as StatusReport["inventory"],
      lock: { pid: 1, host: "h", purpose: "cotal space add alpha", startedAt: "t", status: "alive" } as StatusReport["lock"],
      provisioningOwed: ["alpha"],
    });
    expect(touchesOf(s, "alpha").map((f) => [f.text.split(":")[0], f.severity])).toEqual([["pending claim", "block"], ["lock", "warn"], ["provisioning owed", "block"]]);
    // a name that is only part of another word is not named
    expect(touchesOf(s, "alph")).toEqual([]);
  });
});
