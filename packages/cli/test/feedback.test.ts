import { describe, expect, it } from "vitest";
import { createLogger } from "@cotal/jobs/log";
import { countLogger } from "../src/feedback.js";

describe("counted progress as log lines", () => {
  it("logs the first item, each tenth and the last: 11 lines for 100 tenants, not 100", () => {
    const lines: string[] = [];
    const log = createLogger({ format: "json", name: "cotal up", destination: { write: (l: string) => lines.push(l) } });
    const tick = countLogger(log, "provisioned");
    for (let done = 1; done <= 100; done++) tick({ done, total: 100 });
    const events = lines.map((l) => JSON.parse(l) as { event: string; done: number; total: number; msg: string });
    expect(events.map((e) => e.done)).toEqual([1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect(events.every((e) => e.event === "progress" && e.total === 100)).toBe(true);
    expect(events.at(-1)?.msg).toBe("provisioned: 100/100");
  });
});
