import { describe, expect, it } from "vitest";
import { EXIT, exitCodeFor, parseDuration, redact } from "../src/index.js";

describe("exit codes", () => {
  it("map refusals to the documented groups", () => {
    expect(exitCodeFor("invalid-space-name")).toBe(EXIT.usage);
    expect(exitCodeFor("corrupt-record")).toBe(EXIT.refused);
    expect(exitCodeFor("lock-held")).toBe(EXIT.busy);
    expect(exitCodeFor("conflict")).toBe(EXIT.busy);
    expect(exitCodeFor("space-not-found")).toBe(EXIT.notFound);
    expect(exitCodeFor("broker-start-failed")).toBe(EXIT.broker);
    expect(exitCodeFor("reload-unproven")).toBe(EXIT.unproven);
  });

});

describe("durations", () => {
  it.each([["90", 90], ["90s", 90], ["30m", 1800], ["24h", 86400], ["7d", 604800], ["2w", 1209600]])("%s", (t, n) => {
    expect(parseDuration(t)).toBe(n);
  });
  it.each(["", "0", "1y", "-5m", "5 m", "abc"])("refuses %j", (t) => {
    expect(() => parseDuration(t)).toThrow();
  });
});

describe("redaction", () => {
  it("scrubs anything shaped like an nkeys seed", () => {
    const seed = `SU${"A".repeat(56)}`;
    expect(redact(`seed=${seed} ok`)).toBe("seed=[seed redacted] ok");
    expect(redact("UABC public keys stay")).toBe("UABC public keys stay");
  });
});

describe("job-layer exit codes", () => {
  it("map into the same groups, with 9 for queued work that did not finish", () => {
    expect(exitCodeFor("invalid-payload")).toBe(EXIT.usage);
    expect(exitCodeFor("timeout")).toBe(EXIT.busy);
    expect(exitCodeFor("redis-unreachable")).toBe(EXIT.broker);
    expect(exitCodeFor("job-failed")).toBe(EXIT.jobs);
    expect(exitCodeFor("job-lost")).toBe(EXIT.jobs);
  });
});
