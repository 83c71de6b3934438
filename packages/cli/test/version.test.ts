import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { VERSION } from "../src/version.js";

const BIN = fileURLToPath(new URL("../dist/bundle/cotal.js", import.meta.url));
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

describe("cotal --version and bare groups", () => {
  it("prints the package's version", () => {
    expect(VERSION).toBe(pkg.version);
    for (const flag of ["--version", "-V"]) expect(execFileSync(process.execPath, [BIN, flag], { encoding: "utf8" }).trim()).toBe(pkg.version);
  });
  it("a bare group prints its help and exits 2 (usage), naming its subcommands", () => {
    for (const [argv, sub] of [[[], "space"], [["space"], "add"], [["jobs"], "status"]] as const) {
      const r = spawnSync(process.execPath, [BIN, ...argv], { encoding: "utf8" });
      expect(r.status, argv.join(" ")).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^Usage: cotal ${argv.join(" ")}`.trim()));
      expect(r.stderr).toContain(sub);
    }
  });
});
