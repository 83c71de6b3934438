import { describe, expect, it } from "vitest";
import { decideResume, type ResumeDecision } from "../src/inventory/resume-decision.js";
import type { InventoryRecord } from "../src/inventory/record.js";

// The crash-resume table of docs/resume.md, with the reason each row prints: a refusal's `why` is
// what `cotal status` and the refused verb show the operator.
import { NEW, OLD, OTHER, pending, rec } from "./fixtures/records.js";

describe("decideResume: every row, with its reason", () => {
  it.each<[string, InventoryRecord, string | undefined, ResumeDecision]>([
    ["clean", rec({}), OLD, { action: "fresh" }],
    ["clean, whatever server.conf holds", rec({}), OTHER, { action: "fresh" }],
    ["no pending, applied behind", rec({ appliedGeneration: 6 }), OLD, { action: "refuse", why: "no mutation is pending, yet appliedGeneration 6 differs from generation 7" }],
    ["pending skips a generation", rec({ pending: pending({ generation: 9 }) }), OLD, { action: "refuse", why: "pending claims generation 9, which does not follow the committed 7" }],
    ["pending repeats the generation", rec({ pending: pending({ generation: 7 }) }), OLD, { action: "refuse", why: "pending claims generation 7, which does not follow the committed 7" }],
    ["proven, uncommitted", rec({ appliedGeneration: 8, configDigest: NEW, pending: pending({ stagedDigest: NEW }) }), NEW, { action: "commit-only", why: "generation 8 was proven on the running broker but never committed" }],
    ["proven, server.conf since replaced", rec({ appliedGeneration: 8, configDigest: NEW, pending: pending({ stagedDigest: NEW }) }), OLD, { action: "refuse", why: "generation was proven, but server.conf no longer holds the proven bytes: something outside the saga promoted a config" }],
    ["proven, server.conf missing", rec({ appliedGeneration: 8, configDigest: NEW, pending: pending({ stagedDigest: NEW }) }), undefined, { action: "refuse", why: "generation was proven, but server.conf no longer holds the proven bytes: something outside the saga promoted a config" }],
    ["applied behind, with a claim", rec({ appliedGeneration: 6, pending: pending() }), OLD, { action: "refuse", why: "appliedGeneration 6 is neither the committed 7 nor the pending 8" }],
    ["applied two ahead, with a claim", rec({ appliedGeneration: 9, pending: pending() }), OLD, { action: "refuse", why: "appliedGeneration 9 is neither the committed 7 nor the pending 8" }],
    ["promoted, not proven", rec({ pending: pending({ stagedDigest: NEW }) }), NEW, { action: "complete-forward", why: "the staged config was promoted but its reload was never proven (PROMOTED-BUT-UNCOMMITTED)" }],
    ["staged, not promoted", rec({ pending: pending({ stagedDigest: NEW }) }), OLD, { action: "rollback-staged", why: "the config was staged but never promoted; the broker still runs the committed bytes" }],
    ["nothing staged", rec({ pending: pending() }), OLD, { action: "rollback-unstaged", why: "the previous writer died before staging; nothing was promoted" }],
    ["staged, server.conf foreign", rec({ pending: pending({ stagedDigest: NEW }) }), OTHER, { action: "refuse", why: `server.conf (${OTHER}) is neither the committed config (${OLD}) nor the staged one (${NEW})` }],
    ["staged, server.conf missing", rec({ pending: pending({ stagedDigest: NEW }) }), undefined, { action: "refuse", why: `server.conf (missing) is neither the committed config (${OLD}) nor the staged one (${NEW})` }],
    ["nothing staged, server.conf foreign", rec({ pending: pending() }), OTHER, { action: "refuse", why: `server.conf (${OTHER}) is neither the committed config (${OLD}) and nothing was staged` }],
    ["nothing staged, nothing committed yet", rec({ configDigest: null, pending: pending() }), OLD, { action: "refuse", why: `server.conf (${OLD}) is neither the committed config (none) and nothing was staged` }],
  ])("%s", (_row, record, digest, decision) => {
    expect(decideResume(record, digest)).toEqual(decision);
  });

  it("a missing server.conf never matches an absent digest", () => {
    // configDigest null and server.conf missing must not read as "still the committed bytes"
    const d = decideResume(rec({ configDigest: null, pending: pending() }), undefined);
    expect(d.action).toBe("refuse");
    const proven = decideResume(rec({ appliedGeneration: 8, configDigest: null, pending: pending() }), undefined);
    expect(proven.action).toBe("refuse");
  });
});
