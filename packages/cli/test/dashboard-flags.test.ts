import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT } from "../src/index.js";
import { runCli as run, scratchRoot } from "./helpers/cli.js";

const dir = scratchRoot("cotal-dash-flags-");

describe("cotal dashboard flags", () => {
  it.each([["abc"], ["99999"], ["-1"]])("--port %s is a usage error (exit 2)", async (port) => {
    const r = await run(["--root", dir, "dashboard", "--port", port]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/--port takes a port number/);
  });

  it("a non-loopback --host is refused with exit 2 [invalid-argument] and names --allow-remote", async () => {
    const r = await run(["--root", dir, "dashboard", "--host", "0.0.0.0", "--port", "0"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/\[invalid-argument\]/);
    expect(r.stderr).toMatch(/--allow-remote/);
  });

  it("a missing root is refused with exit 5 [root-missing] before anything listens", async () => {
    const r = await run(["--root", join(dir, "absent"), "dashboard", "--port", "0"]);
    expect(r.code).toBe(EXIT.notFound);
    expect(r.stderr).toMatch(/\[root-missing\]/);
  });
});
