import { describe, expect, it } from "vitest";
import { buildPollReport, type PollAttempt } from "@cotal/harness";
import { densityAfter, MIN_POLL_RATE } from "../fixtures/matrix.js";

// The matrix's "never connects" verdicts count only at MIN_POLL_RATE after the removal
// (docs/saga.md, the race/crash matrix); these pin what that density counts.
const verdict = (startedAt: number, ok = false): PollAttempt => ({ startedAt, endedAt: startedAt + 2, ok, ...(ok ? {} : { error: "Authorization Violation", errorName: "AuthorizationError" }) });

describe("densityAfter: the dense-poll window", () => {
  const removedAt = 1_000;

  it("counts verdicts started from the removal on, per second until the poll was stopped", () => {
    const before = Array.from({ length: 500 }, (_, i) => verdict(i, true)); // the positive control, not evidence
    const after = Array.from({ length: 1_200 }, (_, i) => verdict(removedAt + i * 0.8));
    const report = buildPollReport([...before, ...after], 0, 1_960, "go", 2_000);
    expect(densityAfter(report, removedAt)).toEqual({ attempts: 1_200, perSecond: 1_200 });
  });

  it("a poll a budget ended early counts its silence: the window runs to the stop, not the last answer", () => {
    const after = Array.from({ length: 150 }, (_, i) => verdict(removedAt + i * 0.5)); // 75 ms of polling, then nothing
    const report = buildPollReport(after, 0, removedAt + 80, "go", removedAt + 1_000);
    expect(densityAfter(report, removedAt).perSecond).toBe(150);
    expect(densityAfter(report, removedAt).perSecond).toBeLessThan(MIN_POLL_RATE);
  });

  it("a refused connection or a timeout tested no credential and does not count", () => {
    const refused = Array.from({ length: 2_000 }, (_, i): PollAttempt => ({ startedAt: removedAt + i * 0.5, endedAt: removedAt + i * 0.5 + 0.1, ok: false, error: "connection refused", errorName: "ConnectionError" }));
    const timedOut: PollAttempt = { startedAt: removedAt, endedAt: removedAt + 900, ok: false, error: "timeout", errorName: "TimeoutError" };
    const report = buildPollReport([...refused, timedOut, verdict(removedAt + 10)], 0, removedAt + 1_000, "node", removedAt + 1_000);
    expect(densityAfter(report, removedAt)).toEqual({ attempts: 1, perSecond: 1 });
  });
});
