import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, monotonicMs, type PollReport } from "@cotal/harness";
import type { SpaceAddResult } from "@cotal/saga";
import { clusterWithBeta, disposeClusterRoots, expectContinuousPolling, expectNeverAfter, nodesOf, pollEveryNode, stopAll, upCluster } from "../fixtures/cluster.js";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { cell, recordPoll } from "../fixtures/matrix.js";
import { connectCreds } from "../fixtures/nats.js";
import { connects, credsText, statusOf, untilStatus } from "../fixtures/tenants.js";
import { barrierReached } from "../fixtures/until.js";

// The race matrix (docs/saga.md "The race/crash matrix", test-live/suites/matrix.test.ts) on a
// three-node cluster (docs/cluster.md): each node decides alone whom it admits, so every "connects" and
// "never connects" is asked of all three nodes, and a removed cred is polled on all three continuously.

afterEach(disposeClusterRoots);
afterAll(harnessTeardown);

const barrierDir = (r: LiveRoot, tag: string) => join(r.root, "..", `barrier-${tag}-${process.pid}-${Date.now()}`);

/** The second party of a `barrier:<dir>:2` failpoint: the parked writer goes on. */
function release(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "test"), "");
}

/** Committed, and every member node proved the committed generation. */
async function expectCommittedEverywhere(r: LiveRoot, spaces: string[]): Promise<void> {
  const st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
  expect(st.inventory?.spaces).toEqual(spaces);
  expect(st.inventory?.pending).toBeNull();
  expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
  expect(nodesOf(st).map((n) => [n.name, n.appliedGeneration, n.behind])).toEqual(nodesOf(st).map((n) => [n.name, st.inventory?.generation, false]));
}

/** What a node answers a cred: "connected", or the server's refusal text. */
async function answer(url: string, creds: string): Promise<string> {
  return connectCreds(url, creds).then(
    async (nc) => (await nc.close(), "connected"),
    (e: Error) => e.message,
  );
}

describe("cluster R1: two concurrent adds", () => {
  it("cluster R1 gate: overlapping reads, exactly one conflict, the retry succeeds, every space connects on every node", () =>
    cell("cluster R1 gate", async (m) => {
      const { r, up } = await upCluster();
      const env = { COTAL_FAILPOINT: `after-read:barrier:${barrierDir(r, "r1")}:2` };
      const [b, g] = await Promise.all([r.cotal(["space", "add", "beta", "--json"], { env, timeoutMs: 90_000 }), r.cotal(["space", "add", "gamma", "--json"], { env, timeoutMs: 90_000 })]);
      expect(b.code, b.stderr).toBe(0);
      expect(g.code, g.stderr).toBe(0);
      expect([parseJson<SpaceAddResult>(b).conflicts, parseJson<SpaceAddResult>(g).conflicts].sort()).toEqual([0, 1]);
      await expectCommittedEverywhere(r, ["beta", "default", "gamma"]);
      for (const s of ["beta", "default", "gamma"]) {
        const creds = await credsText(r, s);
        for (const n of up.nodes ?? []) expect(await connects(n.url, creds), `${s} on ${n.name}`).toBe(true);
      }
      m.notes = ["one writer conflicted and re-decided; every node proved the last generation"];
    }));

  it("cluster R1 control: with the CAS disabled (test-only switch) the lost update happens and the dropped tenant is refused on every node", () =>
    cell("cluster R1 control (CAS off)", async () => {
      const { r, up } = await upCluster();
      const env = { COTAL_FAILPOINT: `after-read:barrier:${barrierDir(r, "r1c")}:2`, COTAL_TEST_UNSAFE_DISABLE_CAS: "1" };
      const [b, g] = await Promise.all([r.cotal(["space", "add", "beta"], { env, timeoutMs: 90_000 }), r.cotal(["space", "add", "gamma"], { env, timeoutMs: 90_000 })]);
      expect([b.code, g.code], `${b.stderr}\n${g.stderr}`).toEqual([0, 0]);
      const spaces = (await statusOf(r)).inventory?.spaces ?? [];
      expect(spaces.length).toBe(2); // default and one of the two: the other update was lost
      const lost = ["beta", "gamma"].find((s) => !spaces.includes(s)) as string;
      const kept = ["beta", "gamma"].find((s) => spaces.includes(s)) as string;
      const [lostCreds, keptCreds] = [await credsText(r, lost), await credsText(r, kept)];
      for (const n of up.nodes ?? []) {
        expect(await answer(n.url, lostCreds), `${lost} on ${n.name}`).toMatch(/authorization violation/i);
        expect(await connects(n.url, keptCreds), `${kept} on ${n.name} (the positive control)`).toBe(true);
      }
    }));
});

describe("cluster R3: remove versus a stale add", () => {
  it("cluster R3: the add that read the pre-removal list refuses; beta's cred, polled on all three nodes, never connects after the removal's commit", () =>
    cell("cluster R3 remove vs stale add", async (m) => {
      const { r, up, beta } = await clusterWithBeta();
      const pollers = pollEveryNode(up, beta);
      await Promise.all(pollers.map((p) => p.waitForAttempt((a) => a.ok, { timeoutMs: 10_000 }))); // positive control on every node

      // The add reads first (the pre-removal list) and parks there until the whole removal committed.
      const parked = barrierDir(r, "r3");
      const add = r.cotal(["space", "add", "gamma"], { env: { COTAL_FAILPOINT: `after-read:barrier:${parked}:2`, COTAL_SAGA_MAX_ATTEMPTS: "1" }, timeoutMs: 90_000 });
      await barrierReached(parked, "the add parked after its read");
      const rm = await r.cotal(["space", "rm", "beta"], { timeoutMs: 60_000 });
      const removedAt = monotonicMs();
      expect(rm.code, rm.stderr).toBe(0);
      release(parked);
      const added = await add;
      await new Promise((res) => setTimeout(res, 1_000));
      const reports = await stopAll(pollers);
      expect(added.code, added.stderr).toBe(4);
      expect(added.stderr).toMatch(/\[conflict\]/);
      expectNeverAfter(reports, removedAt);
      recordPoll(m, reports[0] as PollReport, removedAt);
      expectContinuousPolling(reports);
      await expectCommittedEverywhere(r, ["default"]);
      const dflt = await credsText(r, "default");
      for (const n of up.nodes ?? []) expect(await connects(n.url, dflt), `default on ${n.name}`).toBe(true);
    }));
});

describe("partial proofs as each is made", () => {
  it("partial proofs as made: the writer SIGKILLed after node 2's proof leaves nodes 1 and 2 in the claim; status names node 3 alone, which is exactly the node that still admits beta", () =>
    cell("cluster: writer killed after node 2's proof", async () => {
      const { r, up, beta, n3 } = await clusterWithBeta();
      const [n1, n2] = up.nodes ?? [];
      if (!n1 || !n2) throw new Error("three nodes expected");
      for (const n of up.nodes ?? []) expect(await connects(n.url, beta), `beta on ${n.name} before`).toBe(true);
      const rm = await r.cotal(["space", "rm", "beta"], { env: { COTAL_FAILPOINT: "after-node-proof#2:kill" }, timeoutMs: 60_000 });
      expect(rm.signal, `${rm.code} ${rm.stderr}`).toBe("SIGKILL");
      const st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
      expect(st.inventory?.generation).toBe(2); // nothing committed
      expect(st.inventory?.pending?.removes).toEqual(["beta"]);
      expect(nodesOf(st).map((n) => n.stillAdmits)).toEqual([[], [], ["beta"]]);
      // Status is exact, not only conservative: nodes 1 and 2 refuse beta, node 3 (never renamed) admits it.
      expect(await connects(n1.url, beta)).toBe(false);
      expect(await connects(n2.url, beta)).toBe(false);
      expect(await connects(n3.url, beta), "node 3 still admits beta, as status says").toBe(true);
      // The way out: the re-run's resume completes the claim forward on every node.
      const pollers = pollEveryNode(up, beta);
      const fin = await r.cotal(["space", "rm", "beta"], { timeoutMs: 60_000 });
      const doneAt = monotonicMs();
      expect(fin.code, fin.stderr).toBe(0);
      await new Promise((res) => setTimeout(res, 500));
      const reports = await stopAll(pollers);
      for (const [i, report] of reports.entries()) expect(report.successesBetween(doneAt, Number.POSITIVE_INFINITY, "within"), `node ${i + 1} admitted beta after the re-run`).toBe(0);
      await expectCommittedEverywhere(r, ["default"]);
    }));
});
