import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../src/program.js";
import { quickAnswer, renderQuickAnswers, stdoutHelpWidth } from "../src/quick-answer.js";

// The entry answers `cotal --version` and the bare `cotal --help` from build-time text (issue 35); anything
// else must reach commander, or a flag it would refuse or a command's own help would print the wrong text.
describe("the entry's quick answers", () => {
  const answers = renderQuickAnswers(buildProgram());

  it("answer exactly one version or help flag, nothing else", () => {
    expect(quickAnswer(["--version"], 80, answers)).toBe(`${answers.version}\n`);
    expect(quickAnswer(["-V"], 80, answers)).toBe(`${answers.version}\n`);
    for (const argv of [[], ["--root", "/srv/cotal", "--help"], ["space", "--help"], ["--help", "--json"], ["help"], ["--versions"], ["-v"], ["status"]]) {
      expect(quickAnswer(argv, 80, answers), argv.join(" ")).toBeUndefined();
    }
  });

  it("take commander's width: the TTY's columns, 80 for a pipe or a TTY that reports none", () => {
    expect(stdoutHelpWidth({ isTTY: true, columns: 132 })).toBe(132);
    expect(stdoutHelpWidth({ isTTY: true })).toBe(80);
    expect(stdoutHelpWidth({ columns: 132 })).toBe(80);
    const program = buildProgram();
    for (const width of [0, 41, 66, 80, 97, 132, 146, 5000]) {
      program.configureOutput({ getOutHelpWidth: () => width });
      expect(quickAnswer(["-h"], width, answers), `${width} columns`).toBe(program.helpInformation());
    }
  });

  it("refuse to render a help that still wraps at the widest width rendered, or holds colours", () => {
    const long = new Command("x").version("1").option("--wide", "word ".repeat(200));
    expect(() => renderQuickAnswers(long)).toThrow(/still wraps/);
    expect(() => renderQuickAnswers(new Command("x").version("1").description("\u001b[1mbold\u001b[0m"))).toThrow(/ANSI/);
  });
});
