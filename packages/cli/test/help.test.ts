import type { Command } from "commander";
import { describe, expect, it, vi } from "vitest";
import { WORKER_DEFAULTS } from "@cotal/jobs";
import { ERROR_TABLE, EXIT, isErrorCode } from "@cotal/core/errors";
import { HELP, leafCommands, pathOf, type HelpTable } from "../src/help/index.js";
import { buildProgram, main } from "../src/program.js";

// Issue #31: every verb's --help has a one-line summary, 1-3 examples that run as written, flags with
// their defaults, and the exit codes it can end with. The examples are parsed by the real program
// (every action replaced by a recorder); only the root check is stubbed, as the examples name roots
// such as /srv/cotal that this machine does not have.
vi.mock("@cotal/core/root", async (original) => ({ ...(await original<object>()), requireRoot: () => undefined }));

const leaves = leafCommands(buildProgram());
const paths = leaves.map(pathOf);

/** Help entries whose path is no leaf command of the program: stale. */
function staleEntries(table: HelpTable): string[] {
  return Object.keys(table).filter((p) => !paths.includes(p));
}

/** The lines of a `Heading:` section, up to the next blank line. */
function section(help: string, heading: string): string[] {
  const lines = help.split("\n");
  const at = lines.indexOf(heading);
  if (at === -1) return [];
  const end = lines.findIndex((l, i) => i > at && l.trim() === "");
  return lines.slice(at + 1, end === -1 ? undefined : end);
}

/** A shell line's words: whitespace-separated, single or double quotes kept together (and removed). */
function words(line: string): string[] {
  return (line.match(/'[^']*'|"[^"]*"|\S+/g) ?? []).map((w) => w.replace(/^(['"])(.*)\1$/, "$2"));
}

/** Parses an example through a fresh program whose actions only record which command they are. */
async function parseExample(line: string): Promise<{ path: string; command: Command }> {
  const program = buildProgram();
  let reached: Command | undefined;
  for (const leaf of leafCommands(program)) leaf.action(() => void (reached = leaf));
  const [cotal, ...argv] = words(line);
  expect(cotal).toBe("cotal");
  await program.parseAsync(argv, { from: "user" });
  if (!reached) throw new Error(`${line} reached no command`);
  return { path: pathOf(reached), command: reached };
}

/** Every long and short flag `cmd` or an ancestor (the global --root, --log-format) declares. */
function declaredFlags(cmd: Command): Set<string> {
  const flags = new Set<string>();
  for (let c: Command | null = cmd; c; c = c.parent) for (const o of c.options) for (const f of [o.long, o.short]) if (f) flags.add(f);
  return flags;
}

describe("every leaf command's --help (issue #31)", () => {
  it("the program has leaf commands and every one has a help entry; no entry names a path that is not a command", () => {
    expect(paths.length).toBeGreaterThan(15);
    expect(paths.filter((p) => !HELP[p])).toEqual([]);
    expect(staleEntries(HELP)).toEqual([]);
  });

  it("a stale entry (a path that is not a command) is caught", () => {
    expect(staleEntries({ ...HELP, "space frobnicate": { summary: "x", examples: ["cotal space frobnicate"], errors: [] } })).toEqual(["space frobnicate"]);
  });

  describe.each(paths)("cotal %s --help", (path) => {
    const leaf = leaves[paths.indexOf(path)] as Command;
    const entry = HELP[path];
    const help = leaf.helpInformation();

    it("shows the one-line summary, Examples before the flags, and Exit codes", () => {
      expect(entry).toBeDefined();
      expect(entry?.summary).not.toContain("\n");
      expect(entry?.summary.length, "fits one line of commander's 80 columns").toBeLessThanOrEqual(80);
      expect(help.split("\n"), "the summary on a line of its own").toContain(entry?.summary);
      expect(help.indexOf("\nExamples:\n")).toBeGreaterThan(0);
      expect(help.indexOf("\nExamples:\n")).toBeLessThan(help.indexOf("\nOptions:\n"));
      expect(help).toContain("\nExit codes:\n");
    });

    it("has 1-3 examples, each a `cotal` line of this command using only flags it declares, that commander parses", async () => {
      const examples = section(help, "Examples:");
      expect(examples.length).toBeGreaterThanOrEqual(1);
      expect(examples.length).toBeLessThanOrEqual(3);
      for (const line of examples) {
        expect(line).toMatch(/^ {2}cotal /);
        expect(line, "no placeholders").not.toMatch(/[<>]\w|\w[<>]|\.\.\./);
        const flags = declaredFlags(leaf);
        for (const w of words(line.trim()).filter((x) => x.startsWith("-"))) expect(flags, `${w} in ${line}`).toContain(w.split("=")[0]);
        const parsed = await parseExample(line.trim());
        expect(parsed.path, line).toBe(path);
      }
    });

    it("lists exit codes that are all in the exit table, each with the error codes that end with it", () => {
      const lines = section(help, "Exit codes:");
      expect(lines[0]).toMatch(/^ {2}0 ok /);
      const numbers = Object.values(EXIT) as number[];
      for (const l of lines) {
        const m = /^ {2}(\d+) (\w+) +([^:]+)(?:: (.*))?$/.exec(l);
        expect(m, l).not.toBeNull();
        const [, num, name, , codes] = m as RegExpExecArray;
        expect(numbers).toContain(Number(num));
        expect(EXIT[name as keyof typeof EXIT], l).toBe(Number(num));
        for (const code of codes ? codes.split(", ") : []) {
          expect(isErrorCode(code), `${code} in ${l}`).toBe(true);
          if (isErrorCode(code)) expect(ERROR_TABLE[code].exit, `${code} in ${l}`).toBe(Number(num));
        }
      }
      for (const code of entry?.errors ?? []) expect(lines.join("\n")).toContain(code);
    });

    it("shows a default for every option that has one", () => {
      for (const o of leaf.options) if (o.defaultValue !== undefined && !o.negate) expect(help, o.long).toContain(`default: ${JSON.stringify(o.defaultValue)}`);
    });
  });
});

describe("cotal worker --help", () => {
  async function helpOf(argv: string[]): Promise<string> {
    let stdout = "";
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
    try {
      expect(await main(argv)).toBe(EXIT.ok);
    } finally {
      spy.mockRestore();
    }
    return stdout.replace(/\s+/g, " ");
  }

  it("shows the concurrency default (and every other worker default) as the worker applies them", async () => {
    const help = await helpOf(["worker", "--help"]);
    expect(help).toMatch(new RegExp(`--concurrency <n> .*\\(default: ${WORKER_DEFAULTS.concurrency}, or \\$COTAL_WORKER_CONCURRENCY\\)`));
    expect(help).toContain(`(default: ${WORKER_DEFAULTS.batch.maxSize}, or $COTAL_JOBS_BATCH_MAX)`);
    expect(help).toContain(`(default: ${WORKER_DEFAULTS.batch.maxWaitMs}, or $COTAL_JOBS_BATCH_WAIT_MS)`);
    expect(help).toContain(`(default: ${WORKER_DEFAULTS.batch.maxHoldMs}, or $COTAL_JOBS_BATCH_HOLD_MS)`);
    expect(help).toContain(`(default: ${WORKER_DEFAULTS.stall.lockDurationMs}, or $COTAL_JOBS_LOCK_DURATION_MS)`);
    expect(help).toContain(`(default: ${WORKER_DEFAULTS.stall.stalledIntervalMs}, or $COTAL_JOBS_STALLED_INTERVAL_MS)`);
    expect(help).toContain("Examples: cotal worker ");
  });

  it("a group's listing shows each verb's one-line summary", async () => {
    const space = buildProgram().commands.find((c) => c.name() === "space") as Command;
    expect(space.helpInformation().replace(/\s+/g, " ")).toContain(HELP["space add"]?.summary);
  });
});
