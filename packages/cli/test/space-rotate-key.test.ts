import { describe, expect, it } from "vitest";
import { EXIT } from "../src/index.js";
import { rotateKeyFlags } from "../src/commands/space-rotate-key.js";
import { runCli as run, scratchRoot } from "./helpers/cli.js";

// `space rotate-key` refuses bad flags with exit 2 before it reads the root or opens the broker; the
// next is the verb's --help line, which runs as printed (the root named). Nothing here reaches a broker.

const dir = scratchRoot("cotal-rotate-key-usage-");

describe("space rotate-key: usage refusals (exit 2)", () => {
  it.each([
    [["space", "rotate-key", "alpha", "--keep-old", "soon"], /invalid duration "soon"/],
    [["space", "rotate-key", "alpha", "--keep-old", "0s"], /duration must be positive/],
    [["space", "rotate-key", "alpha", "--keep-old", "1h", "--finish"], /--keep-old starts a rotation and --finish ends one/],
  ])("%j", async (argv, message) => {
    const r = await run(["--root", dir, ...argv]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(`next: cotal --root ${dir} space rotate-key --help`);
  });

  it("reads --keep-old as a duration and --finish as itself", () => {
    expect(rotateKeyFlags("a", { keepOld: "24h" })).toEqual({ keepOldSeconds: 86_400 });
    expect(rotateKeyFlags("a", { finish: true })).toEqual({ finish: true });
    expect(rotateKeyFlags("a", {})).toEqual({});
  });
});
