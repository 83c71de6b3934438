import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CotalError, usageError } from "@cotal/core/errors";
import { report } from "../src/output.js";

// Every --json error leaves through report(): one shape whichever layer threw it.
let stdout: string[];
let stderr: string[];
beforeEach(() => {
  stdout = [];
  stderr = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (stdout.push(String(chunk)), true));
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (stderr.push(String(chunk)), true));
});
afterEach(() => vi.restoreAllMocks());

function printed(err: unknown): { exit: number; doc: { error: Record<string, unknown> } } {
  const exit = report(err, true);
  return { exit, doc: JSON.parse(stdout.join("")) as { error: Record<string, unknown> } };
}

const KEYS = ["code", "details", "exit", "message", "next", "retriable"];

describe("report --json", () => {
  it.each([
    ["a core refusal", new CotalError("space-not-found", "no space x", { next: "cotal space list" }), "space-not-found", 5],
    ["a jobs refusal", new CotalError("redis-unreachable", "Redis at 127.0.0.1:1 refused"), "redis-unreachable", 6],
    ["a usage error", usageError("unknown option --frob"), "usage", 2],
    ["an fs error", Object.assign(new Error("EROFS"), { code: "EROFS", syscall: "open", path: "/r/settings.json" }), "io", 8],
    ["an unknown error", new RangeError("boom"), "internal", 1],
  ])("%s prints the one shape and exits with its table row", (_what, err, code, exit) => {
    const r = printed(err);
    expect(Object.keys(r.doc.error).sort()).toEqual(KEYS);
    expect(r.doc.error.code).toBe(code);
    expect(r.doc.error.exit).toBe(exit);
    expect(r.exit).toBe(exit);
    expect(typeof r.doc.error.next).toBe("string"); // every one of these has a way out
    expect(stderr).toEqual([]);
  });

  it("keeps seeds out of the JSON too", () => {
    const seed = `SA${"B".repeat(56)}`;
    printed(new CotalError("invalid-seed", `bad seed ${seed}`));
    expect(stdout.join("")).not.toContain(seed);
  });

  it("text mode prints the message, the code and the next line", () => {
    expect(report(new CotalError("divergence", "disk and KV differ"), false)).toBe(3);
    expect(stderr.join("")).toBe("cotal: disk and KV differ [divergence]\n  next: cotal broker reconcile\n");
  });
});

describe("printableArgv: a printed command names its root", () => {
  it("puts the absolute root first, from --root, --root=, COTAL_ROOT or ./.cotal, and keeps every other argument", async () => {
    const { printableArgv } = await import("../src/output.js");
    expect(printableArgv(["space", "add", "b", "--root", "r", "--json"], {}, "/home/o")).toEqual(["--root", "/home/o/r", "space", "add", "b", "--json"]);
    expect(printableArgv(["--root=/x/.cotal", "status"], {}, "/home/o")).toEqual(["--root", "/x/.cotal", "status"]);
    expect(printableArgv(["down"], { COTAL_ROOT: "../c" }, "/home/o")).toEqual(["--root", "/home/c", "down"]);
    expect(printableArgv(["down"], {}, "/home/o")).toEqual(["--root", "/home/o/.cotal", "down"]);
  });
});
