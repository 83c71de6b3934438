import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SAGA_ERROR_CODES } from "@cotal/saga";
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

  it("are the ones the README documents: every code sits in the row of its exit number", () => {
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
    const rows = new Map<number, string>();
    for (const line of readme.split("\n")) {
      const m = /^\|\s*(\d)\s*\|(.*)\|\s*$/.exec(line);
      if (m) rows.set(Number(m[1]), m[2] ?? "");
    }
    for (const [name, code] of Object.entries(EXIT)) expect(rows.has(code), `README has a row for exit ${code} (${name})`).toBe(true);
    for (const code of SAGA_ERROR_CODES) {
      const exit = exitCodeFor(code);
      expect(rows.get(exit), `README lists \`${code}\` under exit ${exit}`).toContain(`\`${code}\``);
    }
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
  it("map into the same groups, with 9 for queued work that did not finish", async () => {
    const { exitCodeForJobs } = await import("../src/exit-codes.js");
    expect(exitCodeForJobs("invalid-payload")).toBe(EXIT.usage);
    expect(exitCodeForJobs("timeout")).toBe(EXIT.busy);
    expect(exitCodeForJobs("redis-unreachable")).toBe(EXIT.broker);
    expect(exitCodeForJobs("job-failed")).toBe(EXIT.jobs);
    expect(exitCodeForJobs("job-lost")).toBe(EXIT.jobs);
  });
});
