import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { askYesNo, confirmOrRefuse, interactive, type PromptIo } from "../src/confirm.js";
import { nextOf } from "./helpers/cli.js";

// Issue #31: `space rm` deletes a tenant's data, so it is confirmed like `space restore --replace`:
// off a TTY without --yes it refuses confirmation-required (exit 3) before the lock, the queue or the
// broker is touched, and its next is the same line with --yes. Nothing here reaches a broker.

const BIN = new URL("../dist/bundle/cotal.js", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "cotal-rm-confirm-"));
const root = join(dir, "root");
mkdirSync(join(root, "auth"), { recursive: true }); // a root as far as the root check goes
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built CLI with pipes for stdin and stderr (no TTY), from a directory of its own. */
function cotal(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", cwd: dir, env: { ...process.env, COTAL_ROOT: "", REDIS_URL: "redis://127.0.0.1:1" }, stdio: ["pipe", "pipe", "pipe"], timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `line` (a printed `cotal …`) run verbatim by the same CLI, words split as the shell splits these. */
function runNext(line: string): { code: number | null; stdout: string; stderr: string } {
  const [cotalWord, ...args] = line.split(" ");
  expect(cotalWord).toBe("cotal");
  return cotal(args);
}

describe("space rm off a TTY without --yes", () => {
  it.each([
    [["space", "rm", "beta"], "cotal --root ROOT space rm beta --yes"],
    [["space", "rm", "beta", "--json"], "cotal --root ROOT space rm beta --json --yes"],
    [["space", "rm", "beta", "--queue", "--no-wait"], "cotal --root ROOT space rm beta --queue --no-wait --yes"],
  ])("%j refuses confirmation-required (exit 3), changes nothing, and prints itself with --yes", (argv, want) => {
    const before = readdirSync(root, { recursive: true }).sort();
    const r = cotal(["--root", root, ...argv]);
    expect(r.code, r.stderr).toBe(3);
    const printed = argv.includes("--json") ? (JSON.parse(r.stdout) as { error: { code: string; next: string } }).error.next : nextOf(r.stderr);
    expect(argv.includes("--json") ? r.stdout : r.stderr).toContain(argv.includes("--json") ? `"code": "confirmation-required"` : "[confirmation-required]");
    expect(argv.includes("--json") ? r.stdout : r.stderr).toMatch(/space rm deletes space beta for good: its account, every stream and KV bucket/);
    expect(printed).toBe(want.replace("ROOT", root));
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(before); // no lock, no journal, nothing
  });

  it("the printed next, run verbatim, gets past the confirmation", () => {
    const r = cotal(["--root", root, "space", "rm", "beta"]);
    const next = nextOf(r.stderr) as string;
    expect(next).toContain(`--root ${root}`);
    expect(next).toMatch(/ space rm beta /);
    expect(next).toMatch(/ --yes$/);
    const again = runNext(next);
    expect(again.stderr).not.toContain("[confirmation-required]");
    expect(again.stderr).toContain("[missing-broker-trust]"); // it fails further on: this root holds no broker
  });

  it("an invalid name is refused as such first, not asked about", () => {
    const r = cotal(["--root", root, "space", "rm", "Bad Name"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("[invalid-space-name]");
  });
});

describe("space restore --replace --queue off a TTY without --yes", () => {
  it("refuses confirmation-required (exit 3) before the artifact or Redis is read, and prints itself with --yes", () => {
    const before = readdirSync(root, { recursive: true }).sort();
    const from = join(dir, "no-such-backup");
    const r = cotal(["--root", root, "space", "restore", "beta", "--from", from, "--replace", "--queue", "--no-wait"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain("[confirmation-required]");
    expect(r.stderr).toMatch(/--replace deletes space beta's streams that the backup at \S+ holds/);
    expect(nextOf(r.stderr)).toBe(`cotal --root ${root} space restore beta --from ${from} --replace --queue --no-wait --yes`);
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(before);
    // the printed next gets past the confirmation, to the artifact check (this one does not exist)
    const again = runNext(nextOf(r.stderr) as string);
    expect(again.stderr).not.toContain("[confirmation-required]");
    expect(again.stderr).toMatch(/\[(io|artifact-invalid)\]/);
  });
});

/** A scripted terminal: `answer` is what the operator types (or nothing: the input ends). */
function terminal(answer?: string): PromptIo & { asked: () => string } {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  const output = Object.assign(new PassThrough(), { isTTY: true });
  let asked = "";
  output.on("data", (b: Buffer) => (asked += b.toString("utf8")));
  setImmediate(() => (answer === undefined ? input.end() : input.write(`${answer}\n`)));
  return { input, output, asked: () => asked };
}

describe("the prompt", () => {
  it.each([
    ["y", true],
    ["yes", true],
    [" YES ", true],
    ["Y", true],
    ["", false],
    ["n", false],
    ["no", false],
    ["yess", false],
    ["sure", false],
  ])("answer %j → %s", async (answer, want) => {
    const io = terminal(answer);
    expect(await askYesNo("remove space beta (its account, streams and KV data, for good)?", io)).toBe(want);
    expect(io.asked()).toBe("remove space beta (its account, streams and KV data, for good)? [y/N] ");
  });

  it("an input that ends unanswered says no", async () => {
    expect(await askYesNo("remove?", terminal())).toBe(false);
  });

  it("asks only when input and output are both TTYs", () => {
    expect(interactive(terminal("y"))).toBe(true);
    expect(interactive({ input: new PassThrough(), output: Object.assign(new PassThrough(), { isTTY: true }) })).toBe(false);
    expect(interactive({ input: Object.assign(new PassThrough(), { isTTY: true }), output: new PassThrough() })).toBe(false);
  });

  it("confirmOrRefuse: y goes on, n refuses confirmation-required with the rerun-with---yes next, --yes never asks", async () => {
    const what = "space rm deletes space beta for good";
    await expect(confirmOrRefuse({ yes: undefined, question: "remove space beta?", what, io: terminal("y") })).resolves.toBeUndefined();
    await expect(confirmOrRefuse({ yes: undefined, question: "remove space beta?", what, io: terminal("n") })).rejects.toMatchObject({ code: "confirmation-required", message: expect.stringContaining("not confirmed, nothing was changed") as unknown, next: expect.stringMatching(/^\{rerun:/) as unknown });
    const io = terminal("n");
    await expect(confirmOrRefuse({ yes: true, question: "remove space beta?", what, io })).resolves.toBeUndefined();
    expect(io.asked()).toBe("");
    const pipe = { input: new PassThrough(), output: new PassThrough() };
    await expect(confirmOrRefuse({ yes: undefined, question: "remove space beta?", what, io: pipe })).rejects.toMatchObject({ code: "confirmation-required", message: expect.stringContaining("no terminal to ask on") as unknown });
  });
});
