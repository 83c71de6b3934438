import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "@cotal/jobs/log";
import type { MaintenanceProgress, SagaPhase } from "@cotal/core";
import { spaceVerbFeedback } from "../src/add-feedback.js";
import type { Feedback } from "../src/feedback.js";
import { progressBar } from "../src/progress.js";
import { runCli, scratchRoot } from "./helpers/cli.js";
import { fakeTty } from "./helpers/tty.js";

// Issue #31, "a phase line as soon as work starts", for the long verbs beside `space add`: `space rm`
// and `space limits` show the preamble's and the saga's phases (the add's renderer, add-feedback.ts),
// backup and restore a phase line before their first byte bar. The verbs are run through the CLI with
// the saga's verbs replaced by fakes that report as the real ones do, and stderr a fake terminal.

const term = vi.hoisted(() => ({ current: undefined as undefined | { stream: NodeJS.WritableStream; text: () => string }, seen: [] as string[] }));

vi.mock("../src/feedback.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../src/feedback.js")>();
  const { progressBar: bar } = await import("../src/progress.js");
  // every verb's feedback draws on the test's terminal (the unit is the verb's own)
  return { ...real, feedbackFor: async (_cmd: unknown, o: { unit: "count" | "bytes" }) => ({ bar: bar({ enabled: true, unit: o.unit, stream: term.current?.stream }), log: undefined }) };
});
vi.mock("../src/commands/space-queue.js", async (importOriginal) => ({
  ...(await importOriginal<object>()),
  unscheduleRemoved: async () => ({ outcome: "absent" }),
}));

/** What a direct verb's preamble and saga report, in the order they run. */
const STEPS: SagaPhase["step"][] = ["connect", "read", "lock", "journal", "inventory", "lease", "decide", "claim", "render-stage", "promote", "reload-proof", "commit", "release"];
function drive(on: (e: SagaPhase) => void): void {
  for (const step of STEPS) {
    on({ step, state: "start" });
    term.seen.push(term.current?.text() ?? "");
    on({ step, state: "done", ms: 2 });
  }
}

vi.mock("@cotal/core", async (importOriginal) => ({
  ...(await importOriginal<object>()),
  spaceRm: async (o: { name: string; onPhase?: (e: SagaPhase) => void; onNotice?: (m: string) => void }) => {
    if (o.onPhase) drive(o.onPhase);
    o.onNotice?.("a notice from the removal");
    return { space: o.name, outcome: "removed", brokerRunning: true, deletedStreams: [], reaped: [], notes: [] };
  },
  spaceLimits: async (o: { name: string; onPhase?: (e: SagaPhase) => void }) => {
    if (o.onPhase) drive(o.onPhase);
    const q = { disk: 1, mem: 1, streams: 1, consumers: 1, conns: 1, subs: 1, payload: 1, leafs: 1, data: 1 };
    return { space: o.name, outcome: "committed", generation: 3, before: q, after: { ...q, disk: 2 }, reloads: 1 };
  },
  spaceBackup: async (o: { space: string; out: string; onProgress?: (p: MaintenanceProgress) => void }) => {
    term.seen.push(term.current?.text() ?? ""); // what the screen held before the first byte
    o.onProgress?.({ phase: "snapshot", stream: "S1", done: 0, total: 1_048_576 });
    o.onProgress?.({ phase: "snapshot", stream: "S1", done: 1_048_576, total: 1_048_576 });
    return { mode: "online", space: o.space, out: o.out, attemptId: "a", cutId: "c", accountPublicKey: "A", streams: [], excluded: [], bytes: 1_048_576 };
  },
  spaceRestore: async (o: { space: string; from: string; onProgress?: (p: MaintenanceProgress) => void }) => {
    term.seen.push(term.current?.text() ?? "");
    o.onProgress?.({ phase: "verify", done: 1, total: 1 });
    return { mode: "online", space: o.space, from: o.from, streams: [], accountPublicKey: "A" };
  },
}));

const { EXIT } = await import("../src/index.js");

const dir = scratchRoot("cotal-verb-phases-");
beforeEach(() => {
  term.current = fakeTty();
  term.seen.length = 0;
});

const run = (argv: string[]): ReturnType<typeof runCli> => runCli(["--root", dir, ...argv]);

const CLEARED = "\x1b[2K\x1b[1G";

describe.each([
  ["space rm", ["space", "rm", "alpha", "--yes"]],
  ["space limits", ["space", "limits", "alpha", "--max-disk", "2"]],
])("%s on a TTY: a phase line from the first step", (verb, argv) => {
  it("says what runs as each step starts, the space named, and clears the line before the result", async () => {
    const r = await run(argv);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(term.seen[0]).toBe(`${verb} alpha: connecting to the broker…`); // the screen is never blank
    const text = term.current?.text() ?? "";
    const at = (s: string): number => text.indexOf(`${verb} alpha: ${s}`);
    for (const words of ["taking the root's lock…", "claiming…", "reloading and proving…", "committing…"]) expect(at(words), words).toBeGreaterThan(-1);
    expect(at("claiming…")).toBeLessThan(at("committing…"));
    expect(text.endsWith(CLEARED)).toBe(true);
  });
});

describe("space rm's notices", () => {
  it("a notice clears the phase line and takes a line of its own", async () => {
    const r = await run(["space", "rm", "alpha", "--yes"]);
    expect(r.code).toBe(EXIT.ok);
    expect(term.current?.text().endsWith(`releasing the lease…${CLEARED}`)).toBe(true);
    expect(r.stderr).toContain("cotal: a notice from the removal\n");
  });
});

describe.each([
  ["space backup", ["space", "backup", "alpha", "--out", join(dir, "bk")], "snapshot"],
  ["space restore", ["space", "restore", "alpha", "--from", join(dir, "bk")], "verify"],
])("%s on a TTY", (verb, argv, bar) => {
  it("shows a phase line before the first byte bar, then the bar", async () => {
    const r = await run(argv);
    expect(r.code, r.stderr).toBe(EXIT.ok);
    expect(term.seen[0]).toBe(`${verb} alpha: preparing…`);
    const text = term.current?.text() ?? "";
    expect(text.indexOf(`${verb} alpha: preparing…`)).toBeLessThan(text.indexOf(bar));
    expect(text).toMatch(new RegExp(`${bar}\\s+\\[`));
  });
});

describe("--log-format json: one line per phase, the space named", () => {
  it("spaceVerbFeedback logs each step as it ends and draws nothing", () => {
    const raw: string[] = [];
    const tty = fakeTty();
    const fb: Feedback = { bar: progressBar({ enabled: false, unit: "count", stream: tty.stream }), log: createLogger({ format: "json", name: "cotal space rm", destination: { write: (l: string) => raw.push(l) } }) };
    const hooks = spaceVerbFeedback(fb, "space rm", "alpha", () => undefined);
    for (const step of ["lock", "claim", "commit"] as const) {
      hooks.onPhase({ step, state: "start" });
      hooks.onPhase({ step, state: "done", ms: 3, ...(step === "commit" ? { generation: 9 } : {}) });
    }
    hooks.onNotice("noted");
    const lines = raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.event === "phase").map((l) => l.phase)).toEqual(["lock", "claim", "commit"]);
    expect(lines.find((l) => l.phase === "commit")).toMatchObject({ verb: "space rm", space: "alpha", spaces: 1, ms: 3, generation: 9, msg: "space rm alpha: commit (3 ms)" });
    expect(lines.at(-1)).toMatchObject({ event: "notice", msg: "noted" });
    expect(tty.text()).toBe("");
  });
});
