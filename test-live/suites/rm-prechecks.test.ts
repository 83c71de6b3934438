import { existsSync, rmSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { ok, seedSpace, spaceFacts } from "../fixtures/space-data.js";
import { refusedWith, runPrinted } from "../fixtures/printed.js";
import { connects, credsText, disposeLiveRoots, upRoot } from "../fixtures/tenants.js";

// Issue #28 finding 4: `space rm` checks everything its saga needs after the point of no return (the
// stream deletion) before it: the config without the space must render. A refusal there deletes
// nothing, journals nothing, and prints lines that get the operator out, run as printed.
afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

/** alpha, beta (with data) and gamma, whose account record is then lost: the config can no longer be rendered. */
async function gammaRecordLost() {
  const { r, up } = await upRoot();
  ok(await r.cotal(["space", "add", "beta", "gamma"]));
  const beta = await credsText(r, "beta");
  await seedSpace(up.url, beta, "beta", 30, 0);
  const before = await spaceFacts(up.url, beta);
  rmSync(r.layout.accountFile("gamma"));
  return { r, up, beta, before };
}

describe("space rm checks before its point of no return", () => {
  it("another tenant's record missing: refused before any stream is deleted, nothing journaled; the printed lines, followed as printed, end in a removal that works", async () => {
    const { r, up, beta, before } = await gammaRecordLost();
    const refused = await r.cotal(["space", "rm", "beta", "--yes"]);
    let next = refusedWith(refused, "render-refused", 3);
    expect(refused.stderr).toMatch(/space gamma is in the claimed list but its record is missing on disk/);
    expect(await spaceFacts(up.url, beta)).toEqual(before); // beta's data untouched
    expect(existsSync(r.layout.journalFile)).toBe(false);
    // The operator follows each printed line verbatim until one succeeds; none loops back.
    const seen = new Set<string>();
    for (let step = 0; step < 4; step++) {
      expect(seen.has(next), `the printed line loops: ${next}`).toBe(false);
      seen.add(next);
      const res = await runPrinted(next.split("   #")[0] ?? next);
      if (res.code === 0) break;
      const line = res.stderr.split("\n").find((l) => l.startsWith("  next: "));
      expect(line, res.stderr).toBeDefined();
      next = (line as string).slice("  next: ".length);
    }
    ok(await r.cotal(["space", "rm", "beta", "--yes"]));
    expect(await connects(up.url, beta)).toBe(false);
    expect(await connects(up.url, await credsText(r, "alpha"))).toBe(true);
  });

  it("control: with COTAL_TEST_UNSAFE_RM_SKIP_RENDER_CHECK the streams go first and the root is left journaled", async () => {
    const { r, up, beta } = await gammaRecordLost();
    const res = await r.cotal(["space", "rm", "beta", "--yes"], { env: { COTAL_TEST_UNSAFE_RM_SKIP_RENDER_CHECK: "1" } });
    expect(res.code).not.toBe(0);
    expect(existsSync(r.layout.journalFile)).toBe(true);
    expect(Object.keys((await spaceFacts(up.url, beta).catch(() => ({ streams: {} }))).streams)).not.toContain("cotal_events_beta");
  });
});
