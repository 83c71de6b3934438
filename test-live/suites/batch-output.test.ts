import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { SpaceAddResult, UpResult } from "@cotal/core";
import { liveRoot, parseJson, type LiveRoot } from "../fixtures/live-root.js";

const roots: LiveRoot[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((r) => r.dispose()));
});
afterAll(async () => {
  await harnessTeardown();
});

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(3, "0")}`);

describe("batch output on a real broker", () => {
  it("space add of many names prints a count and ranges, --json every name; up summarises the root; --log-format gives JSON lines", async () => {
    const r = await liveRoot("cotal-batch-");
    roots.push(r);
    expect((await r.cotal(["up", "--detach", "--port", String(r.port), "--json"])).code).toBe(0);

    const batch = [...names("t", 40), "zeta"];
    const add = await r.cotal(["space", "add", ...batch]);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/^cotal: added 41 spaces: t001\.\.t040, zeta at generation \d+ \(1 reload/m);
    expect(add.stdout).not.toContain("t002"); // the run is not spelled out
    expect(add.stderr).toBe(""); // not a TTY: no bar, no log lines

    // --json keeps the full list; --log-format json adds JSON progress lines on stderr, nothing else
    const more = names("u", 12);
    const added = await r.cotal(["--log-format", "json", "space", "add", ...more, "--json"]);
    expect(added.code, added.stderr).toBe(0);
    expect(parseJson<SpaceAddResult>(added).added).toEqual(more);
    const lines = added.stderr.trim().split("\n").map((l) => JSON.parse(l) as { name: string; event?: string; done?: number; total?: number; phase?: string; generation?: number });
    expect(lines.every((l) => l.name === "cotal space add")).toBe(true);
    expect(lines.filter((l) => l.event === "progress").at(-1)).toMatchObject({ done: 12, total: 12 });
    // ...and one line per phase of the preamble and the saga, in the order they ran, the commit's with its generation
    const phases = lines.filter((l) => l.event === "phase");
    expect(phases.map((l) => l.phase)).toEqual(["connect", "read", "lock", "journal", "inventory", "lease", "decide", "claim", "materialise", "render-stage", "promote", "reload-proof", "reconnect", "commit", "release"]);
    expect(phases.find((l) => l.phase === "commit")?.generation).toBe(parseJson<SpaceAddResult>(added).generation);

    // a few names are still named as they are
    const few = await r.cotal(["space", "add", "alpha", "beta"]);
    expect(few.stdout).toMatch(/^cotal: added alpha, beta at generation/m);

    // up on the large root: the count and the runs; --json the whole list
    const up = await r.cotal(["up", "--detach"]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/\(56 spaces: alpha, beta, default, t001\.\.t040, u001\.\.u012, zeta\)/);
    const upJson = parseJson<UpResult>(await r.cotal(["up", "--detach", "--json"]));
    expect(upJson.spaces).toHaveLength(56);
    expect(upJson.spaces).toContain("t017");
  });
});
