import { existsSync, readFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { SpaceAddResult, StatusReport, UpResult } from "@cotal/saga";
import { liveRoot, parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { connectCreds } from "../fixtures/nats.js";

const FAILPOINT_EXIT = 86;
const roots: LiveRoot[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((r) => r.dispose()));
});
afterAll(async () => {
  await harnessTeardown();
});

async function upRoot(): Promise<{ r: LiveRoot; up: UpResult; alpha: string }> {
  const r = await liveRoot();
  roots.push(r);
  const res = await r.cotal(["up", "--detach", "--space", "alpha", "--port", String(r.port), "--json"]);
  expect(res.code, res.stderr).toBe(0);
  const c = await r.cotal(["space", "creds", "alpha", "--json"]);
  return { r, up: parseJson<UpResult>(res), alpha: readFileSync(parseJson<{ path: string }>(c).path, "utf8") };
}

async function connects(url: string, creds: string): Promise<boolean> {
  try {
    await (await connectCreds(url, creds)).close();
    return true;
  } catch {
    return false;
  }
}

const statusOf = async (r: LiveRoot) => parseJson<StatusReport>(await r.cotal(["status", "--json"]));

// Each row of the crash-resume table (001 §3.4), reached by killing the writer at its failpoint.
describe("crash windows: the next writer does exactly what the resume table says", () => {
  it.each([
    { failpoint: "after-claim", state: "PENDING", action: "rollback-unstaged" },
    { failpoint: "after-materialise", state: "PENDING", action: "rollback-unstaged" },
    { failpoint: "after-stage", state: "PENDING", action: "rollback-staged" },
    { failpoint: "before-rename", state: "PENDING", action: "rollback-staged" },
  ])("killed at $failpoint ⇒ $action: the next writer rolls back and refuses; nobody moves", async ({ failpoint, state }) => {
    const { r, up, alpha } = await upRoot();
    const crashed = await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: `${failpoint}:exit` } });
    expect(crashed.code).toBe(FAILPOINT_EXIT);
    const mid = await statusOf(r);
    expect(mid.state).toBe(state);
    expect(mid.inventory?.pending?.adds).toEqual(["gamma"]);
    expect(await connects(up.url, alpha)).toBe(true);

    const next = await r.cotal(["space", "add", "delta"]);
    expect(next.code).toBe(4);
    expect(next.stderr).toMatch(/\[rolled-back\]/);
    expect(next.stderr).toMatch(/next: re-run/);
    const after = await statusOf(r);
    expect(after.inventory?.pending).toBeNull();
    expect(after.inventory?.spaces).toEqual(["alpha"]);
    expect(after.state).toBe("clean");
    expect(existsSync(r.layout.accountFile("gamma"))).toBe(false);
    expect(existsSync(r.layout.stagedConf((after.inventory?.generation ?? 0) + 1))).toBe(false);
    expect(await connects(up.url, alpha)).toBe(true);
    // and the refused writer, re-run, succeeds
    expect((await r.cotal(["space", "add", "delta"])).code).toBe(0);
  });

  it.each([
    { failpoint: "after-rename", state: "PROMOTED-BUT-UNCOMMITTED", action: "complete-forward" },
    { failpoint: "after-proof", state: "PROVEN-BUT-UNCOMMITTED", action: "commit-only" },
  ])("killed at $failpoint ⇒ $action: the next writer completes forward; the added tenant is never evicted", async ({ failpoint, state, action }) => {
    const { r, up, alpha } = await upRoot();
    const crashed = await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: `${failpoint}:exit` } });
    expect(crashed.code).toBe(FAILPOINT_EXIT);
    const mid = await statusOf(r);
    expect(mid.state).toBe(state);

    const next = await r.cotal(["space", "add", "delta", "--json"]);
    expect(next.code, next.stderr).toBe(0);
    const res = parseJson<SpaceAddResult>(next);
    expect(res.resumed).toBe(action);
    const after = await statusOf(r);
    expect(after.inventory?.spaces).toEqual(["alpha", "delta", "gamma"]);
    expect(after.inventory?.pending).toBeNull();
    expect(after.inventory?.generation).toBe(after.inventory?.appliedGeneration);
    const g = await r.cotal(["space", "creds", "gamma", "--json"]);
    expect(await connects(up.url, readFileSync(parseJson<{ path: string }>(g).path, "utf8"))).toBe(true);
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("a crash after commit leaves nothing to resume (positive control for the rows above)", async () => {
    const { r } = await upRoot();
    const crashed = await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: "after-commit:exit" } });
    expect(crashed.code).toBe(FAILPOINT_EXIT);
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
    const again = await r.cotal(["up", "--detach", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "gamma"]);
    const g = await r.cotal(["space", "creds", "gamma", "--json"]);
    expect(await connects(up.url, readFileSync(parseJson<{ path: string }>(g).path, "utf8"))).toBe(true);
  });
});

describe("two concurrent adds from two processes", () => {
  it("lose no tenant: the loser sees a conflict, re-reads, and succeeds", async () => {
    const { r, up } = await upRoot();
    const barrier = `${r.root}/../barrier-${Date.now()}`;
    const env = { COTAL_FAILPOINT: `after-read:barrier:${barrier}:2` };
    const [b, g] = await Promise.all([r.cotal(["space", "add", "beta", "--json"], { env }), r.cotal(["space", "add", "gamma", "--json"], { env })]);
    expect(b.code, b.stderr).toBe(0);
    expect(g.code, g.stderr).toBe(0);
    const results = [parseJson<SpaceAddResult>(b), parseJson<SpaceAddResult>(g)];
    expect(results.map((x) => x.conflicts).sort()).toEqual([0, 1]);
    const st = await statusOf(r);
    expect(st.inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
    expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
    expect(st.inventory?.pending).toBeNull();
    for (const s of ["alpha", "beta", "gamma"]) {
      const c = await r.cotal(["space", "creds", s, "--json"]);
      expect(await connects(up.url, readFileSync(parseJson<{ path: string }>(c).path, "utf8"))).toBe(true);
    }
  });

  it("with one attempt, the loser refuses with conflict and succeeds when retried", async () => {
    const { r } = await upRoot();
    const barrier = `${r.root}/../barrier1-${Date.now()}`;
    const env = { COTAL_FAILPOINT: `after-read:barrier:${barrier}:2`, COTAL_SAGA_MAX_ATTEMPTS: "1" };
    const [b, g] = await Promise.all([r.cotal(["space", "add", "beta"], { env }), r.cotal(["space", "add", "gamma"], { env })]);
    const codes = [b.code, g.code].sort();
    expect(codes).toEqual([0, 4]);
    const loser = b.code === 4 ? { out: b, name: "beta" } : { out: g, name: "gamma" };
    expect(loser.out.stderr).toMatch(/\[conflict\]/);
    expect((await r.cotal(["space", "add", loser.name])).code).toBe(0);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
  });

  it("positive control: with the CAS disabled (test-only switch) one tenant is lost and its cred is refused", async () => {
    const { r, up } = await upRoot();
    const barrier = `${r.root}/../barrier2-${Date.now()}`;
    const env = { COTAL_FAILPOINT: `after-read:barrier:${barrier}:2`, COTAL_TEST_UNSAFE_DISABLE_CAS: "1" };
    const [b, g] = await Promise.all([r.cotal(["space", "add", "beta"], { env }), r.cotal(["space", "add", "gamma"], { env })]);
    expect(b.code, b.stderr).toBe(0);
    expect(g.code, g.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.inventory?.spaces.length).toBe(2); // alpha plus only one of beta/gamma: the lost update
    const lost = ["beta", "gamma"].find((s) => !st.inventory?.spaces.includes(s)) as string;
    const c = await r.cotal(["space", "creds", lost, "--json"]);
    const err = await connectCreds(up.url, readFileSync(parseJson<{ path: string }>(c).path, "utf8")).then(
      async (nc) => (await nc.close(), "connected"),
      (e: Error) => e.message,
    );
    expect(err).toMatch(/authorization violation/i);
  });
});
