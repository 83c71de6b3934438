import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { UpResult } from "@cotal/core";
import { parseJson } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, upRoot } from "../fixtures/tenants.js";

// How interrupted mutations are picked up outside the matrix's "next writer" cells.
afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

describe("resuming an interrupted mutation", () => {
  it("a crash after commit leaves nothing to resume", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: "after-commit:exit" } })).code).toBe(FAILPOINT_EXIT);
    const st = await statusOf(r);
    expect(st.inventory?.pending).toBeNull();
    expect(st.inventory?.spaces).toEqual(["alpha", "gamma"]);
  });

  it("up on a running root resumes a promoted-but-uncommitted add", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: "after-rename:exit" } })).code).toBe(FAILPOINT_EXIT);
    const up = await r.cotal(["up", "--detach", "--json"]);
    expect(up.code, up.stderr).toBe(0);
    expect(parseJson<UpResult>(up).notes.join("\n")).toMatch(/complete-forward/);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "gamma"]);
  });

  it("a cold up after a crash between rename and proof boots the promoted bytes and commits", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: "after-rename:exit" } })).code).toBe(FAILPOINT_EXIT);
    expect((await r.cotal(["down"])).code).toBe(0);
    const again = await r.cotal(["up", "--detach"]);
    expect(again.code, again.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "gamma"]);
    expect(await connects(up.url, await credsText(r, "gamma"))).toBe(true);
  });

  it("with one attempt, the loser of two concurrent adds refuses with conflict and succeeds when retried", async () => {
    const { r } = await upRoot();
    const env = { COTAL_FAILPOINT: `after-read:barrier:${r.root}/../barrier-one-${Date.now()}:2`, COTAL_SAGA_MAX_ATTEMPTS: "1" };
    const [b, g] = await Promise.all([r.cotal(["space", "add", "beta"], { env }), r.cotal(["space", "add", "gamma"], { env })]);
    expect([b.code, g.code].sort()).toEqual([0, 4]);
    const loser = b.code === 4 ? { out: b, name: "beta" } : { out: g, name: "gamma" };
    expect(loser.out.stderr).toMatch(/\[conflict\]/);
    expect((await r.cotal(["space", "add", loser.name])).code).toBe(0);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
  });
});
