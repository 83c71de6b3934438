import { describe, expect, it } from "vitest";
import { progressBar, progressWanted } from "../src/progress.js";
import { fakeTty } from "./helpers/tty.js";

describe("progress", () => {
  it("is wanted only on a TTY, without --json and without --log-format", () => {
    expect(progressWanted({ isTTY: true, json: false })).toBe(true);
    expect(progressWanted({ isTTY: false, json: false })).toBe(false);
    expect(progressWanted({ isTTY: undefined, json: false })).toBe(false);
    expect(progressWanted({ isTTY: true, json: true })).toBe(false);
    expect(progressWanted({ isTTY: true, json: false, logFormat: "json" })).toBe(false);
  });

  it("renders a cli-progress bar with counts on a TTY", () => {
    const tty = fakeTty();
    const bar = progressBar({ enabled: true, unit: "count", stream: tty.stream });
    bar.phase("provision", 10);
    bar.update(4, 10, "t0004");
    bar.update(10, 10, "t0010");
    bar.stop();
    expect(tty.text()).toMatch(/provision\s+\[[=-]{30}\] 100% 10\/10 t0010/);
    expect(tty.text()).toMatch(/\d+% \d+\/10/);
  });

  it("draws bytes as MB", () => {
    const tty = fakeTty();
    const bar = progressBar({ enabled: true, unit: "bytes", stream: tty.stream });
    bar.phase("snapshot", 4 * 1_048_576);
    bar.update(2 * 1_048_576, undefined, "ORDERS");
    bar.stop();
    expect(tty.text()).toMatch(/snapshot\s+\[.+\] 50% 2\.0\/4\.0 MB ORDERS/);
  });

  it("writes nothing at all when not wanted", () => {
    const tty = fakeTty();
    const bar = progressBar({ enabled: false, unit: "count", stream: tty.stream });
    bar.phase("provision", 3);
    bar.update(3);
    bar.stop();
    expect(tty.text()).toBe("");
  });
});
