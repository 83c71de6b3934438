import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { describeError, type CotalError } from "../src/entries/errors.js";
import { refusalOf } from "./fixtures/records.js";
import { editDistance, isRoot, requireRoot } from "../src/root/require-root.js";

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "cotal-reqroot-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const root = (p: string) => (mkdirSync(join(p, "auth"), { recursive: true }), p);
const printed = (e: CotalError, argv: string[]) => describeError(e, { argv }).next ?? "";

describe("requireRoot: only up creates a root", () => {
  it("passes a root (a directory holding auth/), refuses a bare directory and a missing path with root-missing", () => {
    const d = temp();
    expect(() => requireRoot(root(join(d, "r")))).not.toThrow();
    mkdirSync(join(d, "plain"));
    expect(isRoot(join(d, "plain"))).toBe(false);
    for (const p of [join(d, "plain"), join(d, "nowhere", "deeper")]) expect(refusalOf(() => requireRoot(p)).code).toBe("root-missing");
  });

  it("offers the one root spelled like a typo as the same command's re-run, flags kept", () => {
    const d = temp();
    const real = root(join(d, "cotal-prod"));
    const e = refusalOf(() => requireRoot(join(d, "cotal-prdo")));
    expect(printed(e, ["--root", join(d, "cotal-prdo"), "space", "rm", "beta", "--yes"])).toBe(`cotal --root ${real} space rm beta --yes   # the root spelled like it`);
  });

  it("offers no other root when none or several are spelled like it: where to look, and nothing that creates one", () => {
    const d = temp();
    root(join(d, "aaa"));
    const none = printed(refusalOf(() => requireRoot(join(d, "zzzzzz"))), ["--root", join(d, "zzzzzz"), "status"]);
    expect(none).toBe(`ls -la ${d}   # no cotal root at ${join(d, "zzzzzz")}; \`cotal up --root DIR\` creates one`);
    root(join(d, "ab"));
    const two = printed(refusalOf(() => requireRoot(join(d, "aab"))), ["--root", join(d, "aab"), "status"]);
    expect(two).toMatch(new RegExp(`^ls -la ${d} {3}# .*roots spelled like it: `));
    expect(`${none}\n${two}`.split("#")[0]).not.toMatch(/\bcotal\b.*\bup\b/);
  });

  it("editDistance is Levenshtein's", () => {
    expect([editDistance("cotal", "cotal"), editDistance("cotal", "cotla"), editDistance("", "abc"), editDistance("kitten", "sitting")]).toEqual([0, 2, 3, 3]);
  });
});
