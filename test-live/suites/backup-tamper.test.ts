import { cpSync, readFileSync, truncateSync, writeFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { snapshotTree } from "../fixtures/live-root.js";
import { ok, seedSpace, spaceFacts, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, upRoot } from "../fixtures/tenants.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

describe("a truncated or tampered artifact is refused and nothing changes", () => {
  it("truncated, flipped byte, missing manifest, wrong space; the intact copy restores", async () => {
    const { r, up } = await upRoot([], "cotal-btamper-");
    ok(await r.cotal(["space", "add", "beta"]));
    await seedSpace(up.url, await credsText(r, "alpha", "tester"), "alpha", 200, 3);
    const before = await spaceFacts(up.url, await credsText(r, "alpha", "tester"));
    ok(await r.cotal(["down", "--preserve-state"]));
    const good = join(r.root, "..", "good");
    ok(await r.cotal(["space", "backup", "alpha", "--out", good]));
    ok(await r.cotal(["up", "--detach"]));
    ok(await r.cotal(["space", "rm", "alpha", "--yes"]));
    ok(await r.cotal(["space", "add", "alpha"]));
    ok(await r.cotal(["down", "--preserve-state"]));

    const snap = join("streams", "cotal_events_alpha.snap");
    const variants: [string, (dir: string) => void, RegExp][] = [
      ["truncated", (d) => truncateSync(join(d, snap), Math.floor(statSync(join(d, snap)).size / 2)), /bytes, the manifest pins/],
      ["flipped", (d) => {
        const b = readFileSync(join(d, snap));
        b[b.length >> 1] = (b[b.length >> 1] ?? 0) ^ 0xff;
        writeFileSync(join(d, snap), b);
      }, /sha256/],
      ["no-manifest", (d) => rmSync(join(d, "manifest.json")), /no manifest\.json/],
      ["checkpoints", (d) => writeFileSync(join(d, "checkpoints.json"), "{}"), /checkpoints\.json/],
    ];
    const storeBefore = snapshotTree(r.layout.storeDir);
    const journalBefore = readFileSync(r.layout.journalFile, "utf8");
    for (const [label, damage, why] of variants) {
      const bad = join(r.root, "..", label);
      cpSync(good, bad, { recursive: true });
      damage(bad);
      const res = await r.cotal(["space", "restore", "alpha", "--from", bad, "--rebind-account"]);
      expect(res.code, `${label}: ${res.stderr}`).toBe(3);
      expect(res.stderr).toMatch(/artifact-invalid/);
      expect(res.stderr).toMatch(why);
      expect(snapshotTree(r.layout.storeDir), label).toEqual(storeBefore);
      expect(readFileSync(r.layout.journalFile, "utf8"), label).toBe(journalBefore);
    }
    const wrong = await r.cotal(["space", "restore", "beta", "--from", good, "--rebind-account"]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/backup of space alpha, not beta/);
    expect(snapshotTree(r.layout.storeDir)).toEqual(storeBefore);

    // positive control: the intact artifact restores, and the data is the data
    ok(await r.cotal(["space", "restore", "alpha", "--from", good, "--rebind-account"]));
    const again = await upJson(r);
    const after = await spaceFacts(again.url, await credsText(r, "alpha", "tester"));
    expect(after.streams.cotal_events_alpha).toEqual(before.streams.cotal_events_alpha);
  });
});
