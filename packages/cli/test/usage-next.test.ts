import { describe, expect, it } from "vitest";
import { EXIT } from "../src/index.js";
import { buildProgram, commandPath } from "../src/program.js";
import { runCli as run, scratchRoot } from "./helpers/cli.js";

// Issue #28 finding 7: every usage refusal prints a `next:`, the refused command's --help line with
// its root named, so it runs as printed from any directory. Nothing here reaches a broker.

const dir = scratchRoot("cotal-usage-next-");

describe("usage refusals name the command's --help", () => {
  it.each([
    [["space", "add", "x", "--max-subs", "-2"], "invalid-argument", "space add"],
    [["space", "add", "x", "--max-disk", "5XB"], "invalid-argument", "space add"],
    [["space", "add", "x", "--frobnicate"], "usage", "space add"],
    [["space", "limits", "x", "--max-conns", "1.5"], "invalid-argument", "space limits"],
    [["nosuchverb"], "usage", ""],
  ])("%j → [%s] and `cotal --root <abs> %s --help`", async (argv, code, path) => {
    const r = await run(["--root", dir, ...argv]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toContain(`[${code}]`);
    expect(r.stderr).toContain(`\n  next: cotal --root ${dir} ${path ? `${path} ` : ""}--help\n`);
  });

  it("keeps a refusal's own next when it names one", async () => {
    const r = await run(["--root", dir, "up", "--cluster", "x"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toContain(`next: cotal --root ${dir} up --cluster 3 --detach`); // the root named (nameRoot)
  });

  it("walks subcommands past global options and stops at the leaf's positionals", () => {
    const p = buildProgram();
    expect(commandPath(p, ["--log-format", "json", "space", "add", "beta", "add"])).toEqual(["space", "add"]);
    expect(commandPath(p, ["node", "run", "--node", "n1"])).toEqual(["node", "run"]);
    expect(commandPath(p, ["status", "--json"])).toEqual(["status"]);
  });
});
