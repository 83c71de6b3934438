import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, monotonicMs, runCotal, type CotalResult } from "@cotal/harness";
import type { SpaceAddResult } from "@cotal/core";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";
import { until } from "../fixtures/until.js";

// A space add releases the maintenance lock once its saga committed and provisions after it
// (docs/saga.md, "Provisioning after the commit"): the next writer's saga overlaps that provisioning,
// and a `space rm` of a space still being provisioned waits for it.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

function barrier(r: LiveRoot, tag: string): string {
  const dir = barrierDir(r, tag);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A CLI run started now; `done` says whether it has exited yet, `at` when (monotonic ms). */
function started(r: LiveRoot, args: string[], env: Record<string, string> = {}) {
  const run = { done: false, at: 0, result: undefined as CotalResult | undefined, p: undefined as unknown as Promise<CotalResult> };
  run.p = runCotal(args, { root: r.root, env, timeoutMs: 90_000 }).then((res) => {
    run.done = true;
    run.at = monotonicMs();
    run.result = res;
    return res;
  });
  return run;
}

/** Stream directories the server's store holds for one account (nats-server: <store>/jetstream/<account>/streams/<name>). */
function storedStreams(r: LiveRoot, accountPublicKey: string): string[] {
  const dir = join(r.layout.storeDir, "jetstream", accountPublicKey, "streams");
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}
const publicKeyOf = (r: LiveRoot, space: string): string => (JSON.parse(readFileSync(r.layout.accountFile(space), "utf8")) as { publicKey: string }).publicKey;

describe("the maintenance lock is released at the commit", () => {
  it("gate: a second batch's saga commits while the first is still provisioning; both end provisioned", () =>
    cell("lock released after the commit", async (m) => {
      const { r, up } = await upRoot();
      const dir = barrier(r, "prov");
      const first = started(r, ["space", "add", "beta", "delta", "--json"], { COTAL_FAILPOINT: `add-provisioning:barrier:${dir}:2` });
      await barrierReached(dir, "the first batch parked after its commit, before provisioning");
      const owedWhilePaused = (await statusOf(r)).provisioningOwed;
      const t0 = monotonicMs();
      const second = await r.cotal(["space", "add", "gamma", "--json"]);
      const secondEnded = monotonicMs();
      expect(second.code, second.stderr).toBe(0);
      expect(parseJson<SpaceAddResult>(second)).toMatchObject({ outcome: "committed", added: ["gamma"], conflicts: 0 });
      expect(first.done).toBe(false); // the overlap: the first batch is still before its provisioning
      expect(owedWhilePaused).toEqual(["beta", "delta"]); // what it still owes stays visible meanwhile
      releaseBarrier(dir);
      const a = await first.p;
      expect(a.code, a.stderr).toBe(0);
      expect(first.at).toBeGreaterThan(secondEnded);
      expect(parseJson<SpaceAddResult>(a).provisioned.map((p) => p.space)).toEqual(["beta", "delta"]);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta", "delta", "gamma"]);
      expect(st.provisioningOwed).toEqual([]);
      for (const s of ["beta", "delta", "gamma"]) expect(await connects(up.url, await credsText(r, s))).toBe(true);
      m.notes = [`second batch committed in ${Math.round(secondEnded - t0)} ms while the first was parked after its commit`];
    }));

  it("control: a batch paused before its commit holds the lock, and the second one waits for it", () =>
    cell("lock held until the commit (control)", async (m) => {
      const { r } = await upRoot();
      const dir = barrier(r, "held");
      const first = started(r, ["space", "add", "beta", "--json"], { COTAL_FAILPOINT: `after-proof:barrier:${dir}:2` });
      await barrierReached(dir, "the first batch parked inside its saga");
      const second = started(r, ["space", "add", "gamma", "--json"]);
      await new Promise((res) => setTimeout(res, 2_500));
      expect(second.done).toBe(false); // blocked behind the lock: the gate above measures a real release
      const releasedAt = monotonicMs();
      releaseBarrier(dir);
      const [a, b] = await Promise.all([first.p, second.p]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      expect(second.at).toBeGreaterThan(releasedAt);
      expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
      m.notes = ["the second add waited on the lock while the first was inside its saga"];
    }));
});

describe("space rm of a space a committed add still provisions", () => {
  it("rm waits for the provisioning, then deletes what it created: no stream of the removed space outlives it", () =>
    cell("rm waits for a space still being provisioned", async (m) => {
      const { r } = await upRoot();
      // Positive control of the probe: alpha's provisioned streams are seen in the store.
      expect(storedStreams(r, publicKeyOf(r, "alpha")).length).toBeGreaterThan(0);
      const addDir = barrier(r, "add");
      const rmDir = barrier(r, "rm");
      const add = started(r, ["space", "add", "beta", "--json"], { COTAL_FAILPOINT: `add-provisioning:barrier:${addDir}:2` });
      await barrierReached(addDir, "the add parked after its commit, before provisioning");
      const betaKey = publicKeyOf(r, "beta");
      const rm = started(r, ["space", "rm", "beta", "--yes", "--json"], { COTAL_FAILPOINT: `rm-streams-deleted:barrier:${rmDir}:2` });
      // The rm gets the lock at once (the add released it); it must not reach its stream deletion yet.
      const rmEarly = await barrierReached(rmDir, "rm past its stream deletion", 3_000).then(() => true, () => false);
      const journalEarly = existsSync(r.layout.journalFile);
      releaseBarrier(addDir);
      const a = await add.p;
      expect(a.code, a.stderr).toBe(0);
      expect(parseJson<SpaceAddResult>(a).provisioned.map((p) => p.space)).toEqual(["beta"]); // it did create beta's streams
      await until("rm past its stream deletion", () => readdirSync(rmDir).length >= 1, 30_000, 20);
      releaseBarrier(rmDir);
      const removed = await rm.p;
      expect(removed.code, removed.stderr).toBe(0);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha"]);
      expect(storedStreams(r, betaKey), "beta's streams outlived its removal").toEqual([]);
      expect(rmEarly).toBe(false);
      expect(journalEarly).toBe(false); // it waited before its first durable step
      expect(st.provisioningOwed).toEqual([]);
      m.notes = ["the removal waited for the committed add's provisioning, then deleted the streams it created"];
    }));

  it("a second add of the same name while the first still provisions: both succeed, provisioned once each, idempotently", () =>
    cell("concurrent add of a name still being provisioned", async () => {
      const { r, up } = await upRoot();
      const dir = barrier(r, "same");
      const first = started(r, ["space", "add", "beta", "--json"], { COTAL_FAILPOINT: `add-provisioning:barrier:${dir}:2` });
      await barrierReached(dir, "the first add parked after its commit");
      const again = await r.cotal(["space", "add", "beta", "--json"]);
      expect(again.code, again.stderr).toBe(0);
      expect(parseJson<SpaceAddResult>(again)).toMatchObject({ outcome: "noop", added: [] });
      expect((await statusOf(r)).provisioningOwed).toEqual(["beta"]); // the first add's marker still stands
      releaseBarrier(dir);
      const a = await first.p;
      expect(a.code, a.stderr).toBe(0);
      const st = await statusOf(r);
      expect(st.provisioningOwed).toEqual([]);
      expect(storedStreams(r, publicKeyOf(r, "beta")).length).toBe(storedStreams(r, publicKeyOf(r, "alpha")).length);
      expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
    }));
});
