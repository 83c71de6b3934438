import { describe, expect, it } from "vitest";
import { GUARDS_ON, type Guards } from "@cotal/core/light";
import { createLogger, defaultLogFormat, isLogFormat } from "../src/log.js";

// A seed-shaped token (S, role U, base32): what must never reach a log line.
const SEED = `SU${"A".repeat(56)}`;

function capture(format: "json" | "pretty", guards: Guards = GUARDS_ON) {
  const lines: string[] = [];
  return { lines, logger: createLogger({ format, name: "test", guards, destination: { write: (l: string) => lines.push(l) } }) };
}

describe("structured logs (pino)", () => {
  it("json: one parseable object per line with the event fields", () => {
    const { lines, logger } = capture("json");
    logger.info({ event: "batch", size: 3 }, "batch of 3 space-add job(s) committed in 5 ms");
    expect(lines).toHaveLength(1);
    const e = JSON.parse(lines[0] ?? "") as Record<string, unknown>;
    expect(e).toMatchObject({ level: 30, name: "test", event: "batch", size: 3, msg: "batch of 3 space-add job(s) committed in 5 ms" });
  });

  it("pretty: pino-pretty's readable line, not JSON", () => {
    const { lines, logger } = capture("pretty");
    logger.warn({ event: "job-stalled" }, "space-add job 1 stalled");
    expect(lines.join("")).toMatch(/WARN \(test\): space-add job 1 stalled/);
    expect(() => JSON.parse(lines[0] ?? "")).toThrow();
  });

  it.each(["json", "pretty"] as const)("%s: a seed in a message, a field or an error never reaches the line", (format) => {
    const { lines, logger } = capture(format);
    logger.info({ creds: `-----BEGIN USER NKEY SEED-----\n${SEED}\n` }, `minted ${SEED}`);
    logger.error(new Error(`refused ${SEED.replace("SU", "SA")}`), "failed");
    const text = lines.join("");
    expect(text).toContain("[seed redacted]");
    expect(text).not.toMatch(/S[UAO]A{50,}/);
  });

  it("the LOG_SEEDS guard switched off turns the scrubber off (the switch the guard's ablation uses)", () => {
    const { lines, logger } = capture("json", { ...GUARDS_ON, LOG_SEEDS: true });
    logger.info(`minted ${SEED}`);
    expect(lines.join("")).toContain(SEED);
  });

  it("formats: json and pretty only; pretty by default on a TTY, json otherwise", () => {
    expect(isLogFormat("json")).toBe(true);
    expect(isLogFormat("pretty")).toBe(true);
    expect(isLogFormat("text")).toBe(false);
    expect(defaultLogFormat(true)).toBe("pretty");
    expect(defaultLogFormat(false)).toBe("json");
    expect(defaultLogFormat(undefined)).toBe("json");
  });
});
