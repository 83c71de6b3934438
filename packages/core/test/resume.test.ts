import { describe, expect, it } from "vitest";
import { decideResume } from "../src/inventory/resume-decision.js";
import { parseInventoryRecord } from "../src/inventory/record.js";

import { NEW, OLD, OTHER, pending, rec } from "./fixtures/records.js";

// One test per row of the crash-resume table (001 §3.4), in its order.
describe("decideResume", () => {
  it("clean: applied == generation, no pending ⇒ fresh work", () => {
    expect(decideResume(rec({}), OLD).action).toBe("fresh");
  });

  it("died at or before the staging CAS, server.conf still the committed bytes ⇒ rollback permitted", () => {
    expect(decideResume(rec({ pending: pending() }), OLD).action).toBe("rollback-unstaged");
  });

  it("nothing staged, yet server.conf is not the committed config (a KV that lost its last writes) ⇒ refuse", () => {
    expect(decideResume(rec({ pending: pending() }), NEW).action).toBe("refuse");
    expect(decideResume(rec({ pending: pending() }), undefined).action).toBe("refuse");
    expect(decideResume(rec({ configDigest: null, pending: pending() }), OLD).action).toBe("refuse");
  });

  it("staged, never renamed (server.conf == configDigest) ⇒ rollback permitted", () => {
    expect(decideResume(rec({ pending: pending({ stagedDigest: NEW }) }), OLD).action).toBe("rollback-staged");
  });

  it("PROMOTED-BUT-UNCOMMITTED (server.conf == stagedDigest) ⇒ complete forward only", () => {
    expect(decideResume(rec({ pending: pending({ stagedDigest: NEW }) }), NEW).action).toBe("complete-forward");
  });

  it("staged bytes identical to the committed ones ⇒ forward (always safe), never rollback", () => {
    expect(decideResume(rec({ pending: pending({ stagedDigest: OLD }) }), OLD).action).toBe("complete-forward");
  });

  it("proven, uncommitted (applied == generation + 1) ⇒ commit only", () => {
    expect(decideResume(rec({ appliedGeneration: 8, configDigest: NEW, pending: pending({ stagedDigest: NEW }) }), NEW).action).toBe("commit-only");
  });

  it("proven but server.conf changed since ⇒ refuse (never roll back a proven generation)", () => {
    const d = decideResume(rec({ appliedGeneration: 8, configDigest: NEW, pending: pending({ stagedDigest: NEW }) }), OLD);
    expect(d.action).toBe("refuse");
  });

  describe("anything else ⇒ refuse and route to reconcile", () => {
    it.each([
      ["server.conf matches neither digest", rec({ pending: pending({ stagedDigest: NEW }) }), OTHER],
      ["server.conf missing while staged", rec({ pending: pending({ stagedDigest: NEW }) }), undefined],
      ["applied behind generation with no pending", rec({ appliedGeneration: 6 }), OLD],
      ["applied ahead of generation with no pending", rec({ appliedGeneration: 8 }), OLD],
      ["pending generation not g+1", rec({ pending: pending({ generation: 9, stagedDigest: NEW }) }), NEW],
      ["applied two ahead", rec({ appliedGeneration: 9, pending: pending({ stagedDigest: NEW }) }), NEW],
      ["applied behind with pending", rec({ appliedGeneration: 6, pending: pending({ stagedDigest: NEW }) }), NEW],
    ])("%s", (_name, record, digest) => {
      expect(decideResume(record, digest).action).toBe("refuse");
    });
  });
});

describe("parseInventoryRecord", () => {
  it("accepts a well-formed record and refuses malformed ones with a reason", () => {
    const ok = rec({ pending: pending({ stagedDigest: NEW }) });
    expect(parseInventoryRecord(JSON.stringify(ok))).toEqual(ok);
    expect(parseInventoryRecord("{")).toMatch(/not JSON/);
    expect(parseInventoryRecord(JSON.stringify({ ...ok, generation: 0 }))).toMatch(/generation/);
    expect(parseInventoryRecord(JSON.stringify({ ...ok, spaces: ["Bad Name"] }))).toMatch(/spaces/);
    expect(parseInventoryRecord(JSON.stringify({ ...ok, spaces: ["a", "a"] }))).toMatch(/spaces/);
    expect(parseInventoryRecord(JSON.stringify({ ...ok, configDigest: "md5:x" }))).toMatch(/configDigest/);
    expect(parseInventoryRecord(JSON.stringify({ ...ok, pending: { ...ok.pending, op: "merge" } }))).toMatch(/op/);
    const minted = rec({ pending: pending({ mints: ["gamma"] }) });
    expect(parseInventoryRecord(JSON.stringify(minted))).toEqual(minted);
    expect(parseInventoryRecord(JSON.stringify(rec({ pending: pending({ mints: ["delta"] }) })))).toMatch(/mints/);
  });
});
