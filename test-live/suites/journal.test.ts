import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CredentialPoller, harnessTeardown, monotonicMs, type CotalResult } from "@cotal/harness";
import type { SpaceRmResult } from "@cotal/core";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { cell, type CellMetrics } from "../fixtures/matrix.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, upRoot } from "../fixtures/tenants.js";

// A standing space-rm journal blocks every mutating verb, each refusal names the removal, and
// re-running it finishes from whatever state it was cut in (docs/refusals.md). The removed space's
// cred is polled continuously through the whole sequence and must never connect once.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

const NEXT_RM = (space: string) => new RegExp(`next: cotal (--root \\S+ )?space rm ${space} --yes\\b`);

function expectJournalBlocked(res: CotalResult, space: string, what: string): void {
  expect(res.code, `${what}: ${res.stderr}`).toBe(3);
  expect(res.stderr, what).toMatch(/\[journal-blocked\]/);
  expect(res.stderr, what).toMatch(NEXT_RM(space));
}

/** The `next:` command of a refusal, as the operator would copy it (the CLI prints it after "next: "). */
function printedNext(res: CotalResult): string[] {
  const line = res.stderr.split("\n").find((l) => l.includes("next: "));
  if (!line) throw new Error(`no next: line in\n${res.stderr}`);
  const cmd = line.slice(line.indexOf("next: ") + 6).split("#")[0]?.trim() ?? "";
  const argv = cmd.split(/\s+/);
  expect(argv[0]).toBe("cotal");
  return argv.slice(1);
}

/** Stops the poller and records, from `since` on, the successes that must be 0 for a removed space. */
async function removedCredSuccesses(poller: CredentialPoller, since: number, m: CellMetrics): Promise<number> {
  const report = await poller.stop();
  m.attempts = report.total;
  m.attemptsPerSecond = Math.round(report.attemptsPerSecond);
  m.successesAfterRemoval = report.successesBetween(since, Number.POSITIVE_INFINITY, "within");
  return m.successesAfterRemoval;
}

/**
 * After a finished removal of v: the journal is gone, `up` serves the sibling again (the positive
 * control), v's polled cred never connected from `since` on, and the root is clean with alpha alone.
 */
async function upCommitsWithoutV(r: LiveRoot, url: string, alpha: string, poller: CredentialPoller, since: number, m: CellMetrics): Promise<void> {
  expect(existsSync(r.layout.journalFile)).toBe(false);
  const upAgain = await r.cotal(["up", "--detach"]);
  expect(upAgain.code, upAgain.stderr).toBe(0);
  expect(await connects(url, alpha)).toBe(true);
  await new Promise((res) => setTimeout(res, 500));
  expect(await removedCredSuccesses(poller, since, m)).toBe(0);
  const st = await statusOf(r);
  expect(st.state).toBe("clean");
  expect(st.inventory?.spaces).toEqual(["alpha"]);
  expect(st.inventory?.pending ?? null).toBeNull();
}

async function withPolledSpace(space: string) {
  const { r, up } = await upRoot();
  expect((await r.cotal(["space", "add", space])).code).toBe(0);
  const creds = await credsText(r, space);
  const alpha = await credsText(r, "alpha");
  const poller = new CredentialPoller({ url: up.url, creds, concurrency: 4, maxDurationMs: 170_000 }).start();
  await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: it connects before
  return { r, up, creds, alpha, poller };
}

const ONLINE_REFUSED = (dir: string): string[][] => [
  ["space", "add", "w"],
  ["space", "rm", "alpha", "--yes"],
  ["space", "creds", "v"],
  ["broker", "reconcile", "--adopt-disk", "--yes"],
  ["up", "--detach"],
  ["down", "--preserve-state"],
  ["space", "backup", "v", "--out", join(dir, "b")],
  ["space", "restore", "v", "--from", join(dir, "b")],
];

const OFFLINE_REFUSED: string[][] = [
  ["up", "--detach"],
  ["up", "--rotate-sys"],
  ["broker", "reconcile", "--adopt-disk", "--yes"],
  ["space", "add", "w"],
];

describe("the journal blocks the root", () => {
  it("rm cut after its commit: every verb refuses naming it, the printed re-run finishes offline, v never connects", () =>
    cell("journal: rm cut after commit", async (m) => {
      const { r, up, alpha, poller } = await withPolledSpace("v");
      const cut = await r.cotal(["space", "rm", "v", "--yes"], { env: { COTAL_FAILPOINT: "after-commit:exit" } });
      const cutAt = monotonicMs();
      expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
      expect(existsSync(r.layout.journalFile)).toBe(true);

      const scratch = mkdtempSync(join(tmpdir(), "cotal-journal-"));
      for (const argv of ONLINE_REFUSED(scratch)) expectJournalBlocked(await r.cotal(argv), "v", argv.join(" "));
      const st = await statusOf(r);
      expect(st.journal).toMatchObject({ op: "space-rm", space: "v", streamsDeleted: true }); // read-only verbs show it
      expect((await r.cotal(["down"])).code).toBe(0); // stopping trusts nobody new: allowed
      let last: CotalResult | undefined;
      for (const argv of OFFLINE_REFUSED) {
        last = await r.cotal(argv);
        expectJournalBlocked(last, "v", `${argv.join(" ")} (broker stopped)`);
      }

      const rerun = await r.cotal([...printedNext(last as CotalResult), "--json"]);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(parseJson<SpaceRmResult>(rerun).outcome).toBe("removed");
      await upCommitsWithoutV(r, up.url, alpha, poller, cutAt, m);
    }), 180_000);

  it("rm cut after the proven reload: the re-run sees its commit point behind it and finishes live", () =>
    cell("journal: rm cut after proof", async (m) => {
      const { r, up, alpha, poller } = await withPolledSpace("v");
      const cut = await r.cotal(["space", "rm", "v", "--yes"], { env: { COTAL_FAILPOINT: "after-proof:exit" } });
      const cutAt = monotonicMs();
      expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
      const blocked = await r.cotal(["space", "add", "w"]);
      expectJournalBlocked(blocked, "v", "space add w");
      const rerun = await r.cotal(printedNext(blocked));
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(await connects(up.url, alpha)).toBe(true);
      expect(await removedCredSuccesses(poller, cutAt, m)).toBe(0);
      const st = await statusOf(r);
      expect(st.state).toBe("clean");
      expect(st.inventory?.spaces).toEqual(["alpha"]);
      expect(st.journal).toBeNull();
    }), 120_000);

  /**
   * A removal cut at `failpoint`, then `down`: `up` refuses naming the re-run, the re-run finishes
   * offline, and the next `up` commits. The cut broker served v until down (nothing reloaded), so the
   * removed cred is judged from the re-run on. `check` sees the re-run's result.
   */
  async function stoppedCutConverges(m: CellMetrics, failpoint: string, check: (res: SpaceRmResult) => void): Promise<void> {
    const { r, up, alpha, poller } = await withPolledSpace("v");
    const cut = await r.cotal(["space", "rm", "v", "--yes"], { env: { COTAL_FAILPOINT: `${failpoint}:exit` } });
    expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
    expect((await r.cotal(["down"])).code).toBe(0);
    const blocked = await r.cotal(["up", "--detach"]);
    expectJournalBlocked(blocked, "v", "up");
    const rerun = await r.cotal([...printedNext(blocked), "--json"]);
    const removedAt = monotonicMs();
    expect(rerun.code, rerun.stderr).toBe(0);
    const res = parseJson<SpaceRmResult>(rerun);
    expect(res).toMatchObject({ outcome: "removed", brokerRunning: false });
    check(res);
    await upCommitsWithoutV(r, up.url, alpha, poller, removedAt, m);
  }

  it("rm cut before its point of no return, broker stopped: the re-run deletes the streams offline and up commits", () =>
    cell("journal: rm cut before streams, offline", (m) =>
      stoppedCutConverges(m, "rm-journaled", (res) => expect(res.deletedStreams.length).toBeGreaterThan(0)), // deleted through the private broker
    ), 120_000);

  it("a removal cut after its rename, then the broker stopped: the printed lines converge (rm ends promoted, up commits)", () =>
    cell("journal: rm cut after rename, offline", (m) =>
      // Before the fix this re-run refused resume-refused naming `cotal up`, which named it again (chaos, seed 2026 rm run 2).
      stoppedCutConverges(m, "after-rename", (res) => expect(res.saga).toBeUndefined()), // its own promoted claim: no second saga
    ), 120_000);

  it("control: with the journal guard off (test-only switch) reconcile --adopt-disk re-admits v and its cred connects", () =>
    cell("journal control (guard off)", async (m) => {
      const { r, poller } = await withPolledSpace("v");
      const cut = await r.cotal(["space", "rm", "v", "--yes"], { env: { COTAL_FAILPOINT: "after-commit:exit" } });
      const cutAt = monotonicMs();
      expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT);
      const guarded = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"]);
      expectJournalBlocked(guarded, "v", "reconcile with the guard on");
      const unguarded = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"], { env: { COTAL_TEST_UNSAFE_IGNORE_JOURNAL: "1" } });
      expect(unguarded.code, unguarded.stderr).toBe(0);
      await poller.waitForAttempt((a) => a.ok && a.startedAt > cutAt, { timeoutMs: 10_000 });
      expect(await removedCredSuccesses(poller, cutAt, m)).toBeGreaterThan(0); // the resurrection the journal guard prevents
    }), 120_000);
});
