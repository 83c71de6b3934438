import { describe, expect, it } from "vitest";
import { createLogger } from "@cotal/jobs/log";
import type { MutationResult, SagaPhase } from "@cotal/core";
import { addFeedback } from "../src/add-feedback.js";
import { phaseFeedback, type Feedback } from "../src/feedback.js";
import { progressBar, type Progress } from "../src/progress.js";
import { queueProgress } from "../src/commands/space-queue.js";
import { fakeTty } from "./helpers/tty.js";

const ttyFeedback = (stream: NodeJS.WritableStream): Feedback => ({ bar: progressBar({ enabled: true, unit: "count", stream }), log: undefined });

function jsonFeedback(): { fb: Feedback; lines: () => Record<string, unknown>[] } {
  const raw: string[] = [];
  const log = createLogger({ format: "json", name: "cotal space add", destination: { write: (l: string) => raw.push(l) } });
  return { fb: { bar: progressBar({ enabled: false, unit: "count" }), log }, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** What a direct add's saga reports, as the saga emits it (its own order is the saga cells' concern). */
const RUN: SagaPhase["step"][] = ["connect", "read", "lock", "journal", "inventory", "lease", "decide", "claim", "materialise", "render-stage", "promote", "reload-proof", "reconnect", "commit", "release"];
const committed = { outcome: "committed", generation: 7 } as MutationResult;

function drive(on: (e: SagaPhase) => void, steps: readonly SagaPhase["step"][]): void {
  for (const step of steps) {
    on({ step, state: "start" });
    on({ step, state: "done", ms: 3, ...(steps.indexOf(step) >= steps.indexOf("claim") ? { generation: 7 } : {}) });
  }
}

describe("a direct space add's phase line (TTY)", () => {
  it("says what runs from the first step, before the provisioning bar", () => {
    const tty = fakeTty();
    const fb = ttyFeedback(tty.stream);
    const hooks = addFeedback(fb, 300, () => undefined);
    hooks.onPhase({ step: "connect", state: "start" });
    expect(tty.text()).toContain("space add: 300 spaces: connecting to the broker…"); // the screen is never blank
    drive(hooks.onPhase, RUN);
    hooks.onCommitted(committed);
    for (let done = 1; done <= 300; done++) hooks.onProvision({ done, total: 300, space: `t${done}` });
    fb.bar.stop();
    const text = tty.text();
    const at = (s: string) => text.indexOf(s);
    for (const words of ["claiming…", "reloading and proving…", "committing…"]) expect(at(`space add: 300 spaces: ${words}`), words).toBeGreaterThan(-1);
    expect(at("space add: 300 spaces: claiming…")).toBeLessThan(at("space add: 300 spaces: committing…"));
    expect(at("space add: 300 spaces: committing…")).toBeLessThan(at("provision "));
    expect(text).toMatch(/provision\s+\[[=-]{30}\] 100% 300\/300 t300/);
  });

  it("a few names: a status line while they provision, no bar; the line is cleared at the end", () => {
    const tty = fakeTty();
    const fb = ttyFeedback(tty.stream);
    const hooks = addFeedback(fb, 2, () => undefined);
    drive(hooks.onPhase, RUN);
    hooks.onCommitted(committed);
    hooks.onProvision({ done: 2, total: 2, space: "b" });
    fb.bar.stop();
    expect(tty.text()).toContain("space add: 2 spaces: provisioning…");
    expect(tty.text()).not.toMatch(/\[[=-]+\]/); // no bar
    expect(tty.text().endsWith("provisioning…\x1b[2K\x1b[1G")).toBe(true); // cleared before the verb's own lines
  });

  it("a long line is cut to the terminal's width; a pty that reports no width (0) is taken as 80 columns", () => {
    const narrow = fakeTty();
    (narrow.stream as unknown as { columns: number }).columns = 30;
    progressBar({ enabled: true, unit: "count", stream: narrow.stream }).status("space add: 300 spaces: reloading and proving…");
    expect(narrow.text()).toBe("space add: 300 spaces: reloa…"); // 29 columns: the cursor never wraps
    const unsized = fakeTty();
    (unsized.stream as unknown as { columns: number }).columns = 0;
    progressBar({ enabled: true, unit: "count", stream: unsized.stream }).status("space add: 300 spaces: connecting to the broker…");
    expect(unsized.text()).toBe("space add: 300 spaces: connecting to the broker…");
  });

  it("off a TTY (or with --json / --log-format) nothing is drawn", () => {
    const tty = fakeTty();
    const fb: Feedback = { bar: progressBar({ enabled: false, unit: "count", stream: tty.stream }), log: undefined };
    const hooks = addFeedback(fb, 300, () => undefined);
    drive(hooks.onPhase, RUN);
    hooks.onCommitted(committed);
    hooks.onProvision({ done: 300, total: 300, space: "t300" });
    fb.bar.stop();
    expect(tty.text()).toBe("");
  });
});

describe("--log-format json: one line per saga phase", () => {
  it("each step that ran, as it ends: phase, verb, spaces, its ms and the elapsed ms, the generation once claimed; no line as a step starts", () => {
    const { fb, lines } = jsonFeedback();
    drive(phaseFeedback(fb, { verb: "space add", spaces: 300 }), RUN);
    const phases = lines().filter((l) => l.event === "phase");
    expect(phases.map((l) => l.phase)).toEqual(RUN);
    for (const l of phases) expect(l).toMatchObject({ name: "cotal space add", verb: "space add", spaces: 300, ms: 3, elapsedMs: expect.any(Number) });
    expect(phases.find((l) => l.phase === "lease")).not.toHaveProperty("generation");
    expect(phases.find((l) => l.phase === "commit")).toMatchObject({ generation: 7, msg: "space add: 300 spaces: commit (3 ms)" });
  });

  it("a direct add's hooks log the phases and the provisioning, and draw nothing", () => {
    const { fb, lines } = jsonFeedback();
    const hooks = addFeedback(fb, 20, () => undefined);
    drive(hooks.onPhase, ["lock", "claim", "commit"]);
    hooks.onCommitted(committed);
    for (let done = 1; done <= 20; done++) hooks.onProvision({ done, total: 20, space: `t${done}` });
    const events = lines();
    expect(events.filter((l) => l.event === "phase").map((l) => l.phase)).toEqual(["lock", "claim", "commit"]);
    expect(events.filter((l) => l.event === "progress").at(-1)).toMatchObject({ what: "provisioned", done: 20, total: 20 });
  });
});

/** A bar that keeps what it was told, as the terminal would show it after its next redraw. */
function recordingBar(): Progress & { shown: () => string } {
  let shown = "";
  return {
    live: true,
    status: () => undefined,
    phase: (label, total) => void (shown = `${label} 0/${total}`),
    update: (done, total, detail) => void (shown = `${done}/${total} ${detail ?? ""}`),
    stop: () => undefined,
    shown: () => shown,
  };
}

describe("the queued add's bar follows the commits", () => {
  it("advances as the KV record lists the names, while no job has finished yet", async () => {
    const bar = recordingBar();
    const reads = [0, 120, 300];
    const tick = queueProgress({ total: 300, bar, committed: async () => reads.shift() });
    const waiting = { finished: 0, failed: 0, pending: 300 };
    await tick(waiting);
    expect(bar.shown()).toBe("0/300 0 committed, 0 done, 0 failed, 300 pending");
    await tick(waiting); // the workers committed a first batch: its jobs still provision
    expect(bar.shown()).toBe("120/300 120 committed, 0 done, 0 failed, 300 pending");
    await tick(waiting);
    expect(bar.shown()).toBe("300/300 300 committed, 0 done, 0 failed, 300 pending");
    await tick({ finished: 300, failed: 0, pending: 0 });
    expect(bar.shown()).toBe("300/300 300 committed, 300 done, 0 failed, 0 pending");
  });

  it("draws on the terminal as a cli-progress bar", async () => {
    const tty = fakeTty();
    const bar = progressBar({ enabled: true, unit: "count", stream: tty.stream });
    bar.phase("queue", 300);
    await queueProgress({ total: 300, bar, committed: async () => 120 })({ finished: 0, failed: 0, pending: 300 });
    bar.stop();
    expect(tty.text()).toMatch(/queue\s+\[.+\] 40% 120\/300 120 committed, 0 done, 0 failed, 300 pending/);
  });

  it("without a record to read (or a failed read) it counts the jobs, finished and failed", async () => {
    const bar = recordingBar();
    const tick = queueProgress({ total: 10, bar, committed: async () => undefined });
    await tick({ finished: 4, failed: 1, pending: 5 });
    expect(bar.shown()).toBe("5/10 4 committed, 4 done, 1 failed, 5 pending");
  });

  it("logs the commits with --log-format: the first, each tenth and the last", async () => {
    const { fb, lines } = jsonFeedback();
    const reads = [10, 150, 300];
    const tick = queueProgress({ total: 300, log: fb.log, committed: async () => reads.shift() });
    for (let i = 0; i < 3; i++) await tick({ finished: 0, failed: 0, pending: 300 });
    const commits = lines().filter((l) => l.what === "queued spaces committed");
    expect(commits.map((l) => l.done)).toEqual([10, 150, 300]);
  });

  it("never reads twice at once: a tick while a read is out shares that read", async () => {
    let calls = 0;
    let release: (n: number) => void = () => undefined;
    const committed = (): Promise<number> => (++calls === 1 ? new Promise<number>((r) => (release = r)) : Promise.resolve(5));
    const tick = queueProgress({ total: 5, committed });
    const first = tick({ finished: 0, failed: 0, pending: 5 });
    const second = tick({ finished: 0, failed: 0, pending: 5 });
    expect(calls).toBe(1);
    release(5);
    await Promise.all([first, second]);
    await tick({ finished: 0, failed: 0, pending: 5 });
    expect(calls).toBe(2);
  });
});
