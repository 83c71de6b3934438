import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CredentialPoller, harnessTeardown, maxReconnectGapMs, monotonicMs, spawnCotal, SurvivorWatcher } from "@cotal/harness";
import type { SpaceAddResult, SpaceRevokeResult } from "@cotal/core";
import { parseJson } from "../fixtures/live-root.js";
import { cell, recordPoll, type CellMetrics, type CellOptions } from "../fixtures/matrix.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, untilStatus, upRoot } from "../fixtures/tenants.js";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";
import { connectCreds } from "../fixtures/nats.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// The live race/crash matrix (docs/saga.md "The race/crash matrix"). Every cell carries a positive control, so it cannot pass
// because nothing happened; the table and reports/matrix.json are written by global-setup.ts.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

/** The cells whose "never connects" rests on a dense poll: a sparse run is run again on a fresh root (fixtures/matrix.ts). */
/** Room for the runs of a dense-poll cell (one run of the longest takes 12-30 s here); the runs stop a minute earlier. */
const DENSE_TIMEOUT_MS = 240_000;
const densePoll: CellOptions = { densePoll: { runs: 6, budgetMs: DENSE_TIMEOUT_MS - 60_000, between: disposeLiveRoots } };

/** Every disconnect the survivor saw was followed by a reconnect within 2 s. */
async function survivorReconnectedQuickly(w: SurvivorWatcher): Promise<void> {
  const events = await w.stop();
  expect(maxReconnectGapMs(events)).toBeLessThan(2_000);
}

describe("R1: two concurrent adds", VERSION_DEPENDENT, () => {
  it("gate: overlapping reads, exactly one conflict, the retry succeeds, alpha/beta/gamma all connect", () =>
    cell("R1 gate", async (m) => {
      const { r, up } = await upRoot();
      const env = { COTAL_FAILPOINT: `after-read:barrier:${barrierDir(r, "r1")}:2` };
      const [b, g] = await Promise.all([r.cotal(["space", "add", "beta", "--json"], { env }), r.cotal(["space", "add", "gamma", "--json"], { env })]);
      expect(b.code, b.stderr).toBe(0);
      expect(g.code, g.stderr).toBe(0);
      expect([parseJson<SpaceAddResult>(b).conflicts, parseJson<SpaceAddResult>(g).conflicts].sort()).toEqual([0, 1]);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
      expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
      expect(st.inventory?.pending).toBeNull();
      for (const s of ["alpha", "beta", "gamma"]) expect(await connects(up.url, await credsText(r, s))).toBe(true);
      m.notes = ["one writer conflicted and re-decided"];
    }));

  it("control: with the CAS disabled (test-only switch) the lost update happens and the dropped tenant is refused", () =>
    cell("R1 control (CAS off)", async () => {
      const { r, up } = await upRoot();
      const env = { COTAL_FAILPOINT: `after-read:barrier:${barrierDir(r, "r1c")}:2`, COTAL_TEST_UNSAFE_DISABLE_CAS: "1" };
      const [b, g] = await Promise.all([r.cotal(["space", "add", "beta"], { env }), r.cotal(["space", "add", "gamma"], { env })]);
      const spaces = (await statusOf(r)).inventory?.spaces ?? [];
      expect(spaces.length).toBe(2);
      const lost = ["beta", "gamma"].find((s) => !spaces.includes(s)) as string;
      // The winner exits 0. The loser committed too (nothing stopped it) and exits 0, or 6 when the winner's
      // reload dropped its account before it provisioned its streams (seen on a loaded 2.9.10 run).
      const [won, lostRun] = lost === "beta" ? [g, b] : [b, g];
      expect(won.code, won.stderr).toBe(0);
      if (lostRun.code !== 0) expect([lostRun.code, lostRun.stderr]).toEqual([6, expect.stringMatching(new RegExp(`provisioning space ${lost} failed`))]);
      const err = await connectCreds(up.url, await credsText(r, lost)).then(
        async (nc) => (await nc.close(), "connected"),
        (e: Error) => e.message,
      );
      expect(err).toMatch(/authorization violation/i);
    }));
});

describe("R2: add during boot", VERSION_DEPENDENT, () => {
  it("an add fired between up's config write and provisioning waits for it; both spaces connect", () =>
    cell("R2 add during boot", async () => {
      const { r, up } = await upRoot();
      expect((await r.cotal(["down"])).code).toBe(0);
      const booting = spawnCotal(["up", "--detach"], { root: r.root, env: { COTAL_FAILPOINT: "up-started:sleep:2500" } });
      const bootExit = new Promise<number>((res) => booting.on("exit", (c) => res(c ?? -1)));
      await untilStatus(r, (s) => s.broker.running, 15_000); // the config is written and the broker is up; provisioning waits
      const addStarted = monotonicMs();
      const add = await r.cotal(["space", "add", "beta"]);
      const addEnded = monotonicMs();
      expect(await bootExit).toBe(0);
      expect(add.code, add.stderr).toBe(0);
      expect(addEnded - addStarted).toBeGreaterThan(1_000); // it blocked behind the boot rather than racing it
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
      for (const s of ["alpha", "beta"]) expect(await connects(up.url, await credsText(r, s))).toBe(true);
    }));
});

describe("R3: remove versus a stale add", VERSION_DEPENDENT, () => {
  it("the add that read the pre-removal list refuses; beta's cred, polled continuously, never connects after removal", () =>
    cell("R3 remove vs stale add", async (m) => {
      const { r, up } = await upRoot();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const betaCreds = await credsText(r, "beta");
      const survivor = await SurvivorWatcher.start({ url: up.url, creds: await credsText(r, "alpha") });
      const poller = new CredentialPoller({ url: up.url, creds: betaCreds, maxDurationMs: 60_000 }).start();
      await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: beta connects before

      // The add reads first (the pre-removal list) and parks there until the whole removal committed:
      // a barrier, not a sleep, since a loaded machine can start it after the removal's journal
      // (CI saw exit 3 where the CAS gives 4: most likely journal-blocked). Niced: it wakes inside the window the poll must keep dense.
      const parked = barrierDir(r, "r3");
      const add = r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: `after-read:barrier:${parked}:2`, COTAL_SAGA_MAX_ATTEMPTS: "1" }, niceness: 10, timeoutMs: 90_000 });
      await barrierReached(parked, "the add parked after its read");
      const rm = await r.cotal(["space", "rm", "beta", "--yes"]);
      const removedAt = monotonicMs();
      expect(rm.code, rm.stderr).toBe(0);
      releaseBarrier(parked);
      const added = await add;
      await new Promise((res) => setTimeout(res, 1_000)); // a second of window past the stale add, as the lease cell keeps
      const report = await poller.stop();
      expect(added.code, added.stderr).toBe(4);
      expect(added.stderr).toMatch(/\[conflict\]/);
      recordPoll(m, report, removedAt);
      expect(report.successes).toBeGreaterThan(0);
      expect(m.successesAfterRemoval).toBe(0);
      expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha"]);
      await survivorReconnectedQuickly(survivor);
    }, densePoll), DENSE_TIMEOUT_MS);
});

describe("R4: a revocation racing an add of another space (issue 33)", VERSION_DEPENDENT, () => {
  it("both read the same record; one conflicts and re-decides; neither is lost: alice's cred, polled continuously, never connects after the revoke returns, gamma connects", () =>
    cell("R4 revoke vs add", async (m) => {
      const { r, up } = await upRoot();
      const alice = await credsText(r, "alpha", "alice");
      const survivor = await SurvivorWatcher.start({ url: up.url, creds: await credsText(r, "alpha", "bob") }); // alpha's other user
      const poller = new CredentialPoller({ url: up.url, creds: alice, maxDurationMs: 60_000 }).start();
      await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: alice connects before

      // Both writers park after their decision read until the other has read too: the same revision, so the
      // second through the lock must lose its CAS and re-decide on the first one's commit (docs/saga.md).
      const env = { COTAL_FAILPOINT: `after-read:barrier:${barrierDir(r, "r4")}:2` };
      let revokedAt = Number.POSITIVE_INFINITY;
      const [rev, add] = await Promise.all([
        r.cotal(["space", "revoke", "alpha", "--user", "alice", "--json"], { env, timeoutMs: 60_000 }).then((res) => ((revokedAt = monotonicMs()), res)),
        r.cotal(["space", "add", "gamma", "--json"], { env, timeoutMs: 60_000 }),
      ]);
      await new Promise((res) => setTimeout(res, 1_000)); // a second of poll past both writers
      const report = await poller.stop();
      expect(rev.code, rev.stderr).toBe(0);
      expect(add.code, add.stderr).toBe(0);
      const revoked = parseJson<SpaceRevokeResult>(rev);
      expect(revoked.outcome).toBe("committed");
      expect(revoked.revoked.map((c) => c.user)).toEqual(["alice"]);
      expect(revoked.conflicts + parseJson<SpaceAddResult>(add).conflicts).toBe(1);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "gamma"]);
      expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
      expect(st.inventory?.pending).toBeNull();
      expect(await connects(up.url, await credsText(r, "gamma"))).toBe(true); // the add was not lost
      recordPoll(m, report, revokedAt);
      expect(report.successes).toBeGreaterThan(0);
      expect(m.successesAfterRemoval).toBe(0); // the revocation was not lost
      await survivorReconnectedQuickly(survivor);
      m.notes = [`conflicts: revoke ${revoked.conflicts}, add ${parseJson<SpaceAddResult>(add).conflicts}`];
    }, densePoll), DENSE_TIMEOUT_MS);
});

describe("reload failure", VERSION_DEPENDENT, () => {
  it("a config the broker rejects: refusal, previous config restored and proven, appliedGeneration unchanged, tenants connect", () =>
    cell("reload-failure arm", async () => {
      const { r, up } = await upRoot();
      const alpha = await credsText(r, "alpha");
      const before = await statusOf(r);
      const settings = JSON.parse(readFileSync(r.layout.settingsFile, "utf8"));
      // nats-server cannot change its listen port on reload: a rendered config with another port is rejected
      writeFileSync(r.layout.settingsFile, JSON.stringify({ ...settings, port: settings.port + 1 }));
      const add = await r.cotal(["space", "add", "beta"]);
      expect(add.code).toBe(7);
      expect(add.stderr).toMatch(/previous config was restored and proven/);
      writeFileSync(r.layout.settingsFile, JSON.stringify(settings));
      const after = await statusOf(r);
      expect(after.inventory?.appliedGeneration).toBe(before.inventory?.appliedGeneration);
      expect(after.inventory?.pending).toBeNull();
      expect(after.configDigest).toBe(before.configDigest);
      expect(existsSync(r.layout.accountFile("beta"))).toBe(false);
      expect(await connects(up.url, alpha)).toBe(true);
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0); // control: fixed, the same add goes through
    }));
});

describe("bootstrap", VERSION_DEPENDENT, () => {
  it("a cold up on a root with two records and no inventory seeds generation 1 with both; a concurrent cold up refuses", () =>
    cell("bootstrap arm", async () => {
      const { r, up } = await upRoot();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      expect((await r.cotal(["down"])).code).toBe(0);
      rmSync(r.layout.storeDir, { recursive: true, force: true }); // a store that never had an inventory
      const first = spawnCotal(["up", "--detach"], { root: r.root, env: { COTAL_FAILPOINT: "up-locked:sleep:1500" } });
      const firstExit = new Promise<number>((res) => first.on("exit", (c) => res(c ?? -1)));
      const deadline = Date.now() + 10_000;
      while (!existsSync(r.layout.lockFile) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
      const second = await r.cotal(["up", "--detach"]);
      expect(second.code).toBe(4);
      expect(second.stderr).toMatch(new RegExp(`locked by pid ${first.pid} `));
      expect(await firstExit).toBe(0);
      const st = await statusOf(r);
      expect(st.inventory?.generation).toBe(1);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      expect(st.state).toBe("clean");
      for (const s of ["alpha", "beta"]) expect(await connects(up.url, await credsText(r, s))).toBe(true);
    }));
});

describe("crash windows (docs/saga.md, the race/crash matrix): kill the writer at a named point; the next writer follows the resume table", VERSION_DEPENDENT, () => {
  const rows = [
    { point: "after-claim", state: "PENDING", next: "rollback", cellName: "crash: step 3 → staging CAS" },
    { point: "after-stage", state: "PENDING", next: "rollback", cellName: "crash: staging CAS → rename" },
    { point: "after-rename", state: "PROMOTED-BUT-UNCOMMITTED", next: "forward", cellName: "crash: rename → proof" },
    { point: "after-proof", state: "PROVEN-BUT-UNCOMMITTED", next: "forward", cellName: "crash: proof CAS → commit" },
  ] as const;

  it.each(rows)("$cellName", ({ point, state, next, cellName }) =>
    cell(cellName, async () => {
      const { r, up } = await upRoot();
      const alpha = await credsText(r, "alpha");
      const survivor = await SurvivorWatcher.start({ url: up.url, creds: alpha });
      const crashed = await r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: `${point}:exit` } });
      expect(crashed.code).toBe(FAILPOINT_EXIT);
      expect((await statusOf(r)).state).toBe(state);
      expect(await connects(up.url, alpha)).toBe(true);
      const after = await r.cotal(["space", "add", "delta"]);
      const st = await statusOf(r);
      expect(st.inventory?.pending).toBeNull();
      expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
      expect(readdirSync(r.root).filter((f) => /^server\.conf\.\d+/.test(f))).toEqual([]);
      if (next === "rollback") {
        expect(after.code).toBe(4);
        expect(after.stderr).toMatch(/\[rolled-back\]/);
        expect(st.inventory?.spaces).toEqual(["alpha"]);
        expect(existsSync(r.layout.accountFile("gamma"))).toBe(false);
      } else {
        expect(after.code, after.stderr).toBe(0);
        expect(st.inventory?.spaces).toEqual(["alpha", "delta", "gamma"]);
        expect(await connects(up.url, await credsText(r, "gamma"))).toBe(true); // the proven tenant is never evicted
      }
      expect(await connects(up.url, alpha)).toBe(true);
      await survivorReconnectedQuickly(survivor);
    }),
  );

  async function pausedWriterArm(disableFence: boolean, m: CellMetrics) {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const betaCreds = await credsText(r, "beta");
    // W1 adds gamma from a list that still holds beta, then stops cold just before its fence.
    // Parked at a barrier just before its fence (not a sleep: a loaded machine must not let it run on).
    const parked = barrierDir(r, "fence");
    const w1 = spawnCotal(["space", "add", "gamma"], { root: r.root, niceness: 10, env: { COTAL_FAILPOINT: `before-rename:barrier:${parked}:2`, ...(disableFence ? { COTAL_TEST_UNSAFE_DISABLE_FENCE: "1" } : {}) } });
    const w1Exit = new Promise<number>((res) => w1.on("exit", (c) => res(c ?? -1)));
    let w1Err = "";
    w1.stderr?.on("data", (d: Buffer) => (w1Err += d.toString()));
    await barrierReached(parked, "W1 parked before its rename", 60_000);
    expect((await statusOf(r)).inventory?.pending?.stagedDigest).toBeTruthy(); // staged, not renamed
    process.kill(w1.pid as number, "SIGSTOP");
    // W2's rollback unlinks W1's staged file, a first guard; put it back when W2 is done so this cell
    // tests the second one, the lease fence, on its own.
    const stagedName = readdirSync(r.root).find((f) => /^server\.conf\.\d+\./.test(f)) as string;
    const stagedBytes = readFileSync(join(r.root, stagedName));
    const poller = new CredentialPoller({ url: up.url, creds: betaCreds, maxDurationMs: 90_000 }).start();
    await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: beta connects before
    // The maintenance lock is per host and advisory; a writer on another host would not see it.
    rmSync(r.layout.lockFile, { force: true });
    // W2 waits out W1's lease (W1 is alive, so only the TTL frees it), rolls W1's claim back, then removes beta.
    const w2a = await r.cotal(["space", "rm", "beta", "--yes"], { timeoutMs: 60_000 });
    expect(w2a.code).toBe(4);
    expect(w2a.stderr).toMatch(/\[rolled-back\]/);
    const w2 = await r.cotal(["space", "rm", "beta", "--yes"]);
    expect(w2.code, w2.stderr).toBe(0);
    const removedAt = monotonicMs();
    writeFileSync(join(r.root, stagedName), stagedBytes, { mode: 0o600 });
    releaseBarrier(parked); // W1 goes on to its fence when woken
    process.kill(w1.pid as number, "SIGCONT");
    const w1Code = await w1Exit;
    await new Promise((res) => setTimeout(res, 1_000));
    const report = await poller.stop();
    recordPoll(m, report, removedAt);
    expect(report.successes).toBeGreaterThan(0);
    return { r, report, w1Code, w1Err, successesAfterRemoval: m.successesAfterRemoval ?? -1 };
  }

  it("lease expiry while paused before rename: the woken writer aborts before rename; beta never connects again", () =>
    cell("crash: lease expiry before rename", async (m) => {
      const { r, w1Code, w1Err, successesAfterRemoval } = await pausedWriterArm(false, m);
      expect(w1Code).toBe(7);
      expect(w1Err).toMatch(/\[lease-lost\]/);
      expect(w1Err).toMatch(/nothing was promoted/);
      expect(successesAfterRemoval).toBe(0);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha"]);
      expect(st.configDigest).toBe(st.inventory?.configDigest);
    }, densePoll), DENSE_TIMEOUT_MS);

  it("control: with the lease fence disabled (test-only switch) the woken writer promotes its stale list and resurrects beta", () =>
    cell("control: lease fence off", async (m) => {
      const { successesAfterRemoval } = await pausedWriterArm(true, m);
      expect(successesAfterRemoval).toBeGreaterThan(0);
    }));
});


