import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, spawnCotal } from "@cotal/harness";
import type { StatusReport } from "@cotal/core";
import { ok } from "../fixtures/space-data.js";
import { runPrinted } from "../fixtures/printed.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, upRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import { parseJson } from "../fixtures/live-root.js";

// Issue #28 finding 9: `cotal status` names what blocks the root (a standing journal entry whose
// owner is gone, a dead lock holder) in its headline state, with a `next:` that runs as printed and
// clears it; never `clean` while every verb refuses.
afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

/** The headline: state, why and next, each asserted by the caller. */
async function headline(r: Parameters<typeof statusOf>[0]): Promise<Pick<StatusReport, "state" | "why" | "next">> {
  const s = await statusOf(r);
  return { state: s.state, why: s.why, ...(s.next ? { next: s.next } : {}) };
}

describe("status names what blocks the root", () => {
  it("a removal cut after its streams were deleted: BLOCKED naming it, space list says removing; the printed next finishes it", async () => {
    const { r } = await upRoot();
    ok(await r.cotal(["space", "add", "beta"]));
    expect((await headline(r)).state).toBe("clean"); // positive control
    const cut = await r.cotal(["space", "rm", "beta", "--yes"], { env: { COTAL_FAILPOINT: "rm-streams-deleted:exit" } });
    expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
    const h = await headline(r);
    expect(h.state).toBe("BLOCKED");
    expect(h.why).toMatch(/a removal of space beta .*is unfinished/);
    expect(h.next).toMatch(new RegExp(`^cotal --root ${r.root} space rm beta --yes\\b`));
    const list = parseJson<{ spaces: { name: string; state: string }[] }>(await r.cotal(["space", "list", "--json"]));
    expect(list.spaces.find((s) => s.name === "beta")?.state).toBe("removing");
    const text = await r.cotal(["status"]);
    expect(text.stdout).toContain(`next:    ${h.next}`);
    ok(await runPrinted(h.next ?? ""));
    expect((await headline(r)).state).toBe("clean");
  });

  it("a --quiesce backup killed while its tenant was quiesced: BLOCKED naming it; the printed next lifts it", async () => {
    const { r, up } = await upRoot();
    const alpha = await credsText(r, "alpha");
    const cut = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", join(r.root, "..", "a.bak")], { env: { COTAL_FAILPOINT: "backup-quiesced:exit" } });
    expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
    expect(await connects(up.url, alpha)).toBe(false);
    const h = await headline(r);
    expect(h.state).toBe("BLOCKED");
    expect(h.why).toMatch(/an online backup of space alpha .*stopped while the tenant was quiesced/);
    expect(h.next).toMatch(new RegExp(`^cotal --root ${r.root} up\\b`));
    ok(await runPrinted(h.next ?? ""));
    expect((await headline(r)).state).toBe("clean");
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("a verb killed while it held the maintenance lock: BLOCKED naming the dead holder; the printed next takes the lock over", async () => {
    const { r } = await upRoot();
    // `up` on the running root holds the lock at up-locked, with no claim of its own (a claim would read PENDING first).
    const held = spawnCotal(["up", "--detach"], { root: r.root, env: { COTAL_FAILPOINT: "up-locked:sleep:30000" } });
    await until("the add holds the lock", async () => ((await statusOf(r)).lock ? true : undefined), 15_000);
    held.kill("SIGKILL");
    await new Promise((res) => held.once("exit", res));
    const h = await headline(r);
    expect(h.state).toBe("BLOCKED");
    expect(h.why).toMatch(new RegExp(`the maintenance lock is held by pid ${held.pid} .*which is gone`));
    ok(await runPrinted(h.next ?? ""));
    const after = await statusOf(r);
    expect([after.state, after.lock]).toEqual(["clean", null]);
  });

  it("an unreadable journal: BLOCKED, never clean", async () => {
    const { r } = await upRoot();
    mkdirSync(r.layout.maintenanceDir, { recursive: true, mode: 0o700 });
    writeFileSync(r.layout.journalFile, "{ not json", { mode: 0o600 });
    const h = await headline(r);
    expect(h.state).toBe("BLOCKED");
    expect(h.why).toMatch(/journal is unreadable/);
  });
});
