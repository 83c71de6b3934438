import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The installed `cotal` is one rolldown bundle (bundle.mjs; docs/development.md, "The CLI bundle").
const BUNDLE = fileURLToPath(new URL("../dist/bundle/", import.meta.url));
const chunks = () => readdirSync(BUNDLE).filter((f) => f.endsWith(".js"));
const text = () => chunks().map((f) => readFileSync(join(BUNDLE, f), "utf8")).join("\n");

describe("the CLI bundle", () => {
  it("holds exactly one CotalError class: jobs and the dashboard share the core's copy, so their errors keep their code and exit", () => {
    expect(text().match(/\bCotalError = class extends Error\b/g) ?? []).toHaveLength(1);
  });

  it("leaves the packages that read their own files or start threads to node_modules, and loads none of them at start", () => {
    const entry = readFileSync(join(BUNDLE, "cotal.js"), "utf8");
    for (const pkg of ["bullmq", "ioredis", "express", "pino", "@bull-board/api"]) {
      expect(text(), pkg).toMatch(new RegExp(`from "${pkg.replace("/", "\\/")}"`));
      expect(entry, `${pkg} in the entry chunk`).not.toMatch(new RegExp(`from "${pkg.replace("/", "\\/")}"`));
    }
  });

  it("starts as an executable script and answers --help", () => {
    const entry = join(BUNDLE, "cotal.js");
    expect(readFileSync(entry, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(entry).isFile()).toBe(true);
    expect(statSync(entry).mode & 0o111, "executable: the `cotal` on PATH links to it").toBe(0o111);
    expect(execFileSync(process.execPath, [entry, "--help"], { encoding: "utf8" })).toMatch(/^Usage: cotal /);
  });
});
