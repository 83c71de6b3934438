import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CredentialPoller, harnessTeardown } from "@cotal/harness";
import type { OnlineRestoreResult } from "@cotal/core";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { dropStreams, revokesAll, toMono, twoSpaces } from "../fixtures/online.js";
import { ok, seedSpace, spaceFacts, type SpaceFacts } from "../fixtures/space-data.js";
import { connects, disposeLiveRoots, statusOf } from "../fixtures/tenants.js";
import { AppClient } from "../fixtures/app-client.js";
import { refusedWith, runPrinted } from "../fixtures/printed.js";
import { withAdmin } from "../fixtures/online.js";
import { corruptWithValidChecksums } from "../fixtures/space-data.js";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";
import { alive } from "../fixtures/processes.js";
import { until } from "../fixtures/until.js";

// The online per-space restore (README: restore; docs/resume.md, the quiesce entry): the backup's
// quiesce, the artifact's streams restored through the running broker, verified, lifted.
afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

const DURABLE = ["KV_cotal_state_alpha", "cotal_events_alpha"];

/** Only the artifact's streams and the consumers on them: what a restore promises to reproduce. */
function durableFacts(f: SpaceFacts): SpaceFacts {
  return {
    streams: Object.fromEntries(Object.entries(f.streams).filter(([k]) => DURABLE.includes(k))),
    consumers: Object.fromEntries(Object.entries(f.consumers).filter(([k]) => DURABLE.some((d) => k.startsWith(`${d}/`)))),
  };
}

/** alpha and beta running, alpha backed up online; alpha's facts at the backup. */
async function backedUp(prefix: string, messages = 300) {
  const t = await twoSpaces(prefix, messages);
  const out = join(t.r.root, "..", "alpha.bak");
  ok(await t.r.cotal(["space", "backup", "alpha", "--out", out]));
  return { ...t, out, atBackup: durableFacts(await spaceFacts(t.up.url, t.alpha)) };
}

/** The tenant lifted, no quiesce standing, its cred connects. */
async function expectLifted(r: LiveRoot, url: string, creds: string): Promise<void> {
  expect(revokesAll(r, "alpha")).toBeUndefined();
  expect((await statusOf(r)).quiesced).toEqual([]);
  expect(await connects(url, creds)).toBe(true);
}

describe("online per-space restore", () => {
  it("restores into the emptied namespace of the same account with no flag: the polled cred never connects from the quiesce proof until the lift, connects after; the sibling keeps working", async () => {
    const { r, up, alpha, beta, out, atBackup } = await backedUp("cotal-restore-online-");
    await dropStreams(r, up.url, "alpha", DURABLE);
    expect(durableFacts(await spaceFacts(up.url, alpha)).streams).toEqual({});
    const betaBefore = await spaceFacts(up.url, beta);
    const poller = new CredentialPoller({ url: up.url, creds: alpha, concurrency: 4, maxDurationMs: 120_000 }).start();
    await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: alpha connects before

    const res = parseJson<OnlineRestoreResult>(ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--json"])));
    expect(res.mode).toBe("online");
    expect(res.rebound).toBe(false);
    const { quiesceProvenAt, restoredAt, liftProvenAt } = res.timeline;
    expect(quiesceProvenAt).toBeLessThan(restoredAt);
    await poller.waitForAttempt((a) => a.ok && a.startedAt > toMono(liftProvenAt), { timeoutMs: 10_000 }); // positive control after the lift
    const report = await poller.stop();
    const [t0, t1] = [toMono(quiesceProvenAt), toMono(restoredAt)];
    expect(report.attempts.filter((a) => a.startedAt >= t0 && a.endedAt <= t1).length, "the poller was polling during the window").toBeGreaterThan(0);
    expect(report.successesBetween(t0, t1, "within"), "alpha connected while quiesced").toBe(0);

    expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(atBackup);
    await expectLifted(r, up.url, alpha);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    expect(await spaceFacts(up.url, beta)).toEqual(betaBefore);
    expect(await connects(up.url, beta)).toBe(true);
  });

  it("refuses restore-target-not-empty over data without --replace and changes nothing; COTAL_TEST_UNSAFE_RESTORE_OVER_DATA makes the same command overwrite it", async () => {
    const { r, up, alpha, out } = await backedUp("cotal-restore-occupied-", 100);
    await seedSpace(up.url, alpha, "alpha", 7, 0); // the data moved on after the backup
    const before = await spaceFacts(up.url, alpha);
    const refused = await r.cotal(["space", "restore", "alpha", "--from", out]);
    expect(refused.code, refused.stderr).toBe(5);
    expect(refused.stderr).toMatch(/restore-target-not-empty/);
    expect(refused.stderr).toContain(`next: cotal --root ${r.root} space restore alpha --from ${out} --replace --yes`);
    expect(await spaceFacts(up.url, alpha)).toEqual(before);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    await expectLifted(r, up.url, alpha);

    const ablated = await r.cotal(["space", "restore", "alpha", "--from", out], { env: { COTAL_TEST_UNSAFE_RESTORE_OVER_DATA: "1" } });
    expect(ablated.code, ablated.stderr).toBe(0);
    expect(await spaceFacts(up.url, alpha)).not.toEqual(before);
  });

  it("--replace without --yes refuses confirmation-required; with --yes it restores the artifact's data exactly over modified data", async () => {
    const { r, up, alpha, beta, out, atBackup } = await backedUp("cotal-restore-replace-", 200);
    await seedSpace(up.url, alpha, "alpha", 9, 0);
    const modified = await spaceFacts(up.url, alpha);
    expect(durableFacts(modified)).not.toEqual(atBackup);
    const betaBefore = await spaceFacts(up.url, beta);

    const unconfirmed = await r.cotal(["space", "restore", "alpha", "--from", out, "--replace"]);
    expect(unconfirmed.code, unconfirmed.stderr).toBe(3);
    expect(unconfirmed.stderr).toMatch(/confirmation-required/);
    expect(unconfirmed.stderr).toContain(`next: cotal --root ${r.root} space restore alpha --from ${out} --replace --yes`);
    expect(await spaceFacts(up.url, alpha)).toEqual(modified);

    const res = parseJson<OnlineRestoreResult>(ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--replace", "--yes", "--json"])));
    expect(res.replaced.sort()).toEqual(DURABLE);
    expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(atBackup);
    await expectLifted(r, up.url, alpha);
    expect(await spaceFacts(up.url, beta)).toEqual(betaBefore);
  });

  it("without --replace, a namespace holding data in a stream the artifact does not name is refused before the quiesce, naming it; COTAL_TEST_UNSAFE_RESTORE_OVER_DATA merges into it", async () => {
    const { r, up, alpha, out } = await backedUp("cotal-restore-merge-", 50);
    await dropStreams(r, up.url, "alpha", DURABLE); // the artifact's streams are gone; another stream of the tenant holds data
    await withAdmin(r, up.url, async (jsm, js) => {
      await jsm.streams.add({ name: "orders_alpha", subjects: ["orders.alpha.>"] });
      for (let i = 0; i < 5; i++) await js.publish("orders.alpha.x", new TextEncoder().encode(`o${i}`));
    });
    const before = await spaceFacts(up.url, alpha);
    const refused = await r.cotal(["space", "restore", "alpha", "--from", out]);
    const next = refusedWith(refused, "restore-target-not-empty", 5);
    expect(refused.stderr).toMatch(/orders_alpha \(5 messages/);
    expect(next).toContain(`cotal --root ${r.root} space restore alpha --from ${out} --replace --yes`);
    expect(await spaceFacts(up.url, alpha)).toEqual(before);
    expect(revokesAll(r, "alpha")).toBeUndefined(); // never quiesced
    const merged = await r.cotal(["space", "restore", "alpha", "--from", out], { env: { COTAL_TEST_UNSAFE_RESTORE_OVER_DATA: "1" } });
    expect(merged.code, merged.stderr).toBe(0);
    expect(Object.keys((await spaceFacts(up.url, alpha)).streams)).toEqual(expect.arrayContaining([...DURABLE, "orders_alpha"]));
  });

  it("--replace from an artifact that does not fit the tenant's disk quota is refused before the quiesce, naming both figures; the old data stays; the printed next raises the quota and restores", async () => {
    const { r, up, alpha, out, atBackup } = await backedUp("cotal-restore-quota-", 1_500); // ~3 MiB of events
    await dropStreams(r, up.url, "alpha", ["cotal_events_alpha"]); // the big stream is gone; the KV bucket keeps its data
    const old = await spaceFacts(up.url, alpha);
    ok(await r.cotal(["space", "limits", "alpha", "--max-disk", "2M"]));
    const app = await AppClient.start(up.url, alpha, "alpha", { kvOnly: true });
    await app.writable();
    const refused = await r.cotal(["space", "restore", "alpha", "--from", out, "--replace", "--yes"]);
    const next = refusedWith(refused, "quota-overcommit", 3);
    expect(refused.stderr).toMatch(/over its disk quota of 2097152 bytes/);
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} space limits alpha --max-disk \\d+ && cotal --root ${r.root} space restore alpha --from ${out} --replace --yes$`));
    const seen = await app.stop();
    expect([seen.disconnects, seen.closed, seen.kvFailures]).toEqual([[], false, []]); // never quiesced
    expect((await spaceFacts(up.url, alpha)).streams.KV_cotal_state_alpha?.messages).toBeGreaterThanOrEqual(old.streams.KV_cotal_state_alpha?.messages ?? 0);
    // The printed exit, verbatim from /: the quota raised, then the restore.
    const fixed = await runPrinted(next);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(atBackup);
    await expectLifted(r, up.url, alpha);
  });

  it("space limits refuses a disk quota below what the tenant stores, naming both figures; the printed line keeps every flag; --force accepts it", async () => {
    const { r } = await backedUp("cotal-limits-usage-", 1_500);
    const refused = await r.cotal(["space", "limits", "alpha", "--max-disk", "1M", "--max-conns", "50"]);
    const next = refusedWith(refused, "quota-overcommit", 3);
    expect(refused.stderr).toMatch(/already stores [\d.]+ MiB \(\d+ bytes\), more than a disk quota of 1 MiB \(1048576 bytes\)/);
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} space limits alpha --max-disk \\d+ --max-conns 50   # or add --force`));
    expect(parseJson<{ quota: { disk: number } }>(await r.cotal(["space", "limits", "alpha", "--json"])).quota.disk).not.toBe(1048576); // unchanged
    const printed = await runPrinted(next);
    expect(printed.code, printed.stderr).toBe(0);
    ok(await r.cotal(["space", "limits", "alpha", "--max-disk", "1M", "--force"]));
    expect(parseJson<{ quota: { disk: number } }>(await r.cotal(["space", "limits", "alpha", "--json"])).quota.disk).toBe(1048576);
  });

  it("a --replace whose restore fails after the deletion (a snapshot the server refuses, its checksums recomputed) ends with the tenant's own streams put back exactly, and says so", async () => {
    const { r, up, alpha, out } = await backedUp("cotal-restore-putback-", 200);
    await seedSpace(up.url, alpha, "alpha", 11, 0); // the tenant's data moved on since the backup
    const pre = durableFacts(await spaceFacts(up.url, alpha));
    corruptWithValidChecksums(out, "streams/cotal_events_alpha.snap");
    const failed = await r.cotal(["space", "restore", "alpha", "--from", out, "--replace", "--yes"]);
    expect(failed.code, failed.stderr).not.toBe(0);
    expect(failed.stderr).toMatch(/were put back from the safety copy and it was lifted/);
    expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(pre);
    await expectLifted(r, up.url, alpha);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    expect(readdirSync(r.layout.maintenanceDir).filter((f) => f.startsWith("safety-"))).toEqual([]);
  });

  it("control: with COTAL_TEST_UNSAFE_RESTORE_WITHOUT_SAFETY_COPY the same failure leaves the tenant without the streams it had", async () => {
    const { r, up, alpha, out } = await backedUp("cotal-restore-nocopy-", 200);
    await seedSpace(up.url, alpha, "alpha", 11, 0);
    const pre = durableFacts(await spaceFacts(up.url, alpha));
    corruptWithValidChecksums(out, "streams/cotal_events_alpha.snap");
    const failed = await r.cotal(["space", "restore", "alpha", "--from", out, "--replace", "--yes"], { env: { COTAL_TEST_UNSAFE_RESTORE_WITHOUT_SAFETY_COPY: "1" } });
    expect(failed.code, failed.stderr).not.toBe(0);
    expect(durableFacts(await spaceFacts(up.url, alpha))).not.toEqual(pre);
  });

  it("control: with COTAL_TEST_UNSAFE_RESTORE_SKIP_QUOTA_CHECK the too-large --replace quiesces the tenant (its application is disconnected) before the server refuses it", async () => {
    const { r, up, alpha, out } = await backedUp("cotal-restore-noquota-", 1_500);
    await dropStreams(r, up.url, "alpha", ["cotal_events_alpha"]);
    ok(await r.cotal(["space", "limits", "alpha", "--max-disk", "2M"]));
    const app = await AppClient.start(up.url, alpha, "alpha", { kvOnly: true });
    await app.writable();
    const res = await r.cotal(["space", "restore", "alpha", "--from", out, "--replace", "--yes"], { env: { COTAL_TEST_UNSAFE_RESTORE_SKIP_QUOTA_CHECK: "1" } });
    const seen = await app.stop();
    expect(res.code, res.stderr).not.toBe(0);
    expect(seen.disconnects.length, "quiesced before anything refused it").toBeGreaterThan(0);
  });

  // data: what the tenant holds once converged. pre: its data before the restore; artifact: the backup's
  const cuts: { point: string; replace: boolean; converge: "up" | "rerun"; data: "pre" | "artifact" | "none"; unfinished?: boolean }[] = [
    { point: "restore-online-quiesced", replace: false, converge: "up", data: "pre" },
    { point: "restore-online-quiesced", replace: false, converge: "rerun", data: "artifact" },
    { point: "restore-online-installed", replace: false, converge: "up", data: "pre" },
    { point: "restore-online-installed", replace: false, converge: "rerun", data: "artifact" },
    { point: "restore-online-quiesced", replace: true, converge: "up", data: "pre" },
    { point: "restore-online-deletion-began", replace: true, converge: "up", data: "pre" },
    { point: "restore-online-deletion-began", replace: true, converge: "rerun", data: "artifact" },
    { point: "restore-online-deleted", replace: true, converge: "up", data: "pre" },
    { point: "restore-online-stream", replace: true, converge: "up", data: "pre" },
    { point: "restore-online-installed", replace: true, converge: "up", data: "pre" },
    { point: "restore-safety-taken", replace: true, converge: "up", data: "pre" },
    { point: "restore-safety-taken", replace: true, converge: "rerun", data: "artifact" },
    { point: "restore-online-installed", replace: true, converge: "rerun", data: "artifact" },
  ];
  for (const c of cuts) {
    it(`kill at ${c.point}${c.replace ? " (--replace)" : ""}: ${c.converge === "up" ? "cotal up" : "the printed re-run"} converges to a lifted tenant with ${c.data === "pre" ? "its pre-restore data" : c.data === "artifact" ? "the artifact's data" : "no data and the restore still journaled"}`, async () => {
      const { r, up, alpha, out, atBackup } = await backedUp(`cotal-restore-${c.point}-`, 120);
      if (c.replace) await seedSpace(up.url, alpha, "alpha", 5, 0);
      else await dropStreams(r, up.url, "alpha", DURABLE);
      const pre = durableFacts(await spaceFacts(up.url, alpha));
      const args = ["space", "restore", "alpha", "--from", out, ...(c.replace ? ["--replace", "--yes"] : [])];
      const cut = await r.cotal(args, { env: { COTAL_FAILPOINT: `${c.point}:kill` } });
      expect(cut.code, cut.stderr).not.toBe(0);
      expect(typeof revokesAll(r, "alpha")).toBe("number");
      expect(await connects(up.url, alpha)).toBe(false);

      // status and the refusal of another verb name the re-run
      const rerun = `cotal --root ${r.root} space restore alpha --from ${out}${c.replace ? " --replace --yes" : ""}`;
      const st = await statusOf(r);
      expect(st.quiesced.map((q) => [q.space, q.next.split("   #")[0]])).toEqual([["alpha", rerun]]);
      const refused = await r.cotal(["space", "add", "gamma"]);
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toMatch(/journal-blocked/);
      expect(refused.stderr).toContain(`next: ${rerun}`);

      if (c.converge === "up") ok(await r.cotal(["up", "--detach", "--port", String(r.port)]));
      else ok(await r.cotal(args));
      await expectLifted(r, up.url, alpha);
      const got = durableFacts(await spaceFacts(up.url, alpha));
      if (c.data === "artifact") expect(got).toEqual(atBackup);
      else if (c.data === "pre") expect(got).toEqual(pre);
      else expect(got).toEqual({ streams: {}, consumers: {} });

      if (c.unfinished) {
        // `up` lifted but left the journal at the unfinished restore; status says so; the printed next finishes it
        const after = await statusOf(r);
        expect(after.restoreUnfinished?.next).toBe(rerun);
        ok(await r.cotal(args));
        expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(atBackup);
        await expectLifted(r, up.url, alpha);
      }
      expect(existsSync(r.layout.journalFile)).toBe(false);
    });
  }

  it("the broker killed (kill -9) mid restore --replace, the replaced streams deleted and one of the artifact's installed: broker-unreachable (retriable) with a next that starts the broker and re-runs; run verbatim from /, the tenant ends with the artifact's data, never less, lifted, and an application writes", async () => {
    const { r, up, alpha, out, atBackup } = await backedUp("cotal-restore-brokerkill-", 120);
    await seedSpace(up.url, alpha, "alpha", 5, 0); // the tenant's data moved on: "old" and "new" differ
    const pre = durableFacts(await spaceFacts(up.url, alpha));
    const messages = (f: SpaceFacts) => Object.fromEntries(Object.entries(f.streams).map(([k, v]) => [k, v.messages]));
    expect(messages(pre)).not.toEqual(messages(atBackup));
    const args = ["space", "restore", "alpha", "--from", out, "--replace", "--yes"];
    const dir = barrierDir(r, "restore-brokerkill");
    const run = r.cotal(args, { env: { COTAL_FAILPOINT: `restore-online-stream#2:barrier:${dir}:2` } });
    await barrierReached(dir, "the restore before its second stream");
    // Positive control: the kill strikes inside the window where the tenant holds neither its old data nor the
    // artifact's (its streams deleted, the first of the artifact's installed), with the safety copy complete.
    const mid = JSON.parse(readFileSync(r.layout.journalFile, "utf8")) as { op: string; stage: string; replace?: { deletionBegan: boolean }; safety?: { complete: boolean } };
    expect(mid).toMatchObject({ op: "quiesce", stage: "restoring", replace: { deletionBegan: true }, safety: { complete: true } });
    process.kill(up.pid, "SIGKILL");
    await until("the broker gone", () => !alive(up.pid), 10_000);
    releaseBarrier(dir);
    const failed = await run;
    const next = refusedWith(failed, "broker-unreachable", 6);
    expect(failed.stderr).not.toMatch(/invalid-argument|nothing was changed/);
    expect(next).toMatch(new RegExp(`^cotal --root ${r.root} up --detach && cotal --root ${r.root} space restore alpha --from ${out} --replace --yes(\\s|$)`));
    expect(existsSync(r.layout.journalFile)).toBe(true); // the entry stands for up, with its safety copy
    const followed = await runPrinted(next, {}, 180_000);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(/put the tenant's own streams back from its safety copy/); // up: the old data first
    const got = durableFacts(await spaceFacts(up.url, alpha));
    // Never less: every stream holds the old data's count or the artifact's; after the re-run, the artifact's exactly.
    for (const [name, n] of Object.entries(messages(got))) expect([messages(pre)[name], messages(atBackup)[name]], name).toContain(n);
    expect(got).toEqual(atBackup);
    await expectLifted(r, up.url, alpha);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    expect(readdirSync(r.layout.maintenanceDir).filter((f) => f.startsWith("safety-"))).toEqual([]);
    const app = await AppClient.start(up.url, alpha, "alpha");
    await app.writable();
    expect((await app.stop()).closed).toBe(false);
  });

  it("a plain down after a killed --replace, then the cold up: lifted right after the boot with the tenant's own streams put back from the safety copy; the printed re-run then restores", async () => {
    const { r, up, alpha, out, atBackup } = await backedUp("cotal-restore-cold-", 80);
    await seedSpace(up.url, alpha, "alpha", 6, 0); // the tenant's data moved on: "old" and "new" differ
    const pre = durableFacts(await spaceFacts(up.url, alpha));
    const args = ["space", "restore", "alpha", "--from", out, "--replace", "--yes"];
    const cut = await r.cotal(args, { env: { COTAL_FAILPOINT: "restore-online-installed:kill" } });
    expect(cut.code, cut.stderr).not.toBe(0);
    expect(typeof revokesAll(r, "alpha")).toBe("number");
    ok(await r.cotal(["down"]));
    const again = parseJson<{ url: string; notes: string[] }>(ok(await r.cotal(["up", "--detach", "--port", String(r.port), "--json"])));
    expect(again.notes.join("\n")).toMatch(/lifted the quiesce of space alpha left by online restore .*put the tenant's own streams back from its safety copy: KV_cotal_state_alpha, cotal_events_alpha/);
    await expectLifted(r, again.url, alpha);
    expect(durableFacts(await spaceFacts(again.url, alpha))).toEqual(pre);
    expect((await statusOf(r)).restoreUnfinished).toBeFalsy();
    expect(readdirSync(r.layout.maintenanceDir).filter((f) => f.startsWith("safety-"))).toEqual([]);
    ok(await r.cotal(args));
    expect(durableFacts(await spaceFacts(up.url, alpha))).toEqual(atBackup);
    expect(existsSync(r.layout.journalFile)).toBe(false);
  });

  it("a restore cut short and the broker stopped: the re-run names `cotal up --detach` (never itself, which would loop offline); following it lifts, and the re-run then restores", async () => {
    const { r, alpha, out, atBackup } = await backedUp("cotal-restore-stopped-", 60);
    const args = ["space", "restore", "alpha", "--from", out, "--replace", "--yes"];
    const cut = await r.cotal(args, { env: { COTAL_FAILPOINT: "restore-online-quiesced:kill" } });
    expect(cut.code, cut.stderr).not.toBe(0);
    ok(await r.cotal(["down"]));
    const stopped = await r.cotal(args);
    expect(stopped.code, stopped.stderr).toBe(6);
    expect(stopped.stderr).toMatch(/broker-not-running/);
    const next = /next: (.*?)\s*(#|$)/m.exec(stopped.stderr)?.[1];
    expect(next).toBe(`cotal --root ${r.root} up --detach`);
    const again = parseJson<{ url: string }>(ok(await r.cotal(["up", "--detach", "--port", String(r.port), "--json"])));
    await expectLifted(r, again.url, alpha);
    ok(await r.cotal(args));
    expect(durableFacts(await spaceFacts(again.url, alpha))).toEqual(atBackup);
    expect(existsSync(r.layout.journalFile)).toBe(false);
  });
});
