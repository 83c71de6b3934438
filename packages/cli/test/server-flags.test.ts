import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT } from "../src/index.js";
import { nextOf, runCli as run, scratchRoot } from "./helpers/cli.js";

// The two foreground server verbs refuse bad flags and a missing root before anything listens: --port
// is one parser (src/serve.ts), the loopback rule is each server's own (--allow-remote). `extra` keeps
// metrics off Redis, so nothing here reaches a broker or Redis.

const dir = scratchRoot("cotal-server-flags-");

describe.each([
  { verb: "metrics", port: 9465, extra: ["--no-redis"] },
  { verb: "dashboard", port: 8090, extra: [] },
])("cotal $verb flags", ({ verb, port, extra }) => {
  it.each([["abc"], ["99999"], ["-1"]])("--port %s is a usage error (exit 2)", async (bad) => {
    const r = await run(["--root", dir, verb, "--port", bad]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/--port takes a port number/);
  });

  it("a bad --port's next is this verb on its default port, the root named", async () => {
    const r = await run(["--root", dir, verb, "--port", "abc"]);
    expect(nextOf(r.stderr)).toBe(`cotal --root ${dir} ${verb} --port ${port}`);
  });

  it("a non-loopback --host is refused with exit 2 [invalid-argument] and names --allow-remote", async () => {
    const r = await run(["--root", dir, verb, "--host", "0.0.0.0", "--port", "0", ...extra]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/\[invalid-argument\]/);
    expect(r.stderr).toMatch(/--allow-remote/);
  });

  it("a missing root is refused with exit 5 [root-missing] before anything listens", async () => {
    const r = await run(["--root", join(dir, "absent"), verb, "--port", "0", ...extra]);
    expect(r.code).toBe(EXIT.notFound);
    expect(r.stderr).toMatch(/\[root-missing\]/);
  });
});

describe("cotal metrics flags", () => {
  it("--max-age-ms that is not a whole number is a usage error (exit 2)", async () => {
    const r = await run(["--root", dir, "metrics", "--max-age-ms", "1.5"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toMatch(/--max-age-ms takes a whole number/);
  });
});
