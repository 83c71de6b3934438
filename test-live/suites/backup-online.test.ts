import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CredentialPoller, harnessTeardown, SurvivorWatcher } from "@cotal/harness";
import { verifyArtifact, type OnlineBackupResult } from "@cotal/core/backup";
import { loadSpaceAccount } from "@cotal/core/root";
import { parseJson } from "../fixtures/live-root.js";
import { dropStreams, revokesAll, toMono, twoSpaces } from "../fixtures/online.js";
import { AppClient } from "../fixtures/app-client.js";
import { liveServer } from "../fixtures/server-version.js";
import { ok, spaceFacts, upJson } from "../fixtures/space-data.js";
import { connects, credsText, disposeLiveRoots, statusOf } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";

// The online per-space backup (README: backup): only the tenant is quiesced (its JWT revokes every
// user issued before the quiesce), the artifact is the offline format, a crash resumes to lifted.
afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

describe("live backup (the default on a running broker)", () => {
  it("the tenant's application (nats.js, default options) keeps publishing and writing KV through it: 0 failures, 0 disconnects, never closed; each stream restores within the manifest's range", async () => {
    const { r, up, alpha, beta } = await twoSpaces("cotal-live-backup-", 4_000);
    const app = await AppClient.start(up.url, alpha, "alpha", { intervalMs: 2 });
    const sibling = await AppClient.start(up.url, beta, "beta");
    await app.writable();
    const before = app.snapshot();
    const out = join(r.root, "..", "alpha.live");
    const backup = parseJson<OnlineBackupResult>(ok(await r.cotal(["space", "backup", "alpha", "--out", out, "--json"])));
    const during = app.snapshot().published - before.published;
    await app.writable(); // still writing after it
    const seen = await app.stop();
    const siblingSeen = await sibling.stop();
    expect(backup.consistency).toBe("per-stream");
    expect(backup.timeline).toBeUndefined(); // no quiesce, no lift
    expect(during, "the application wrote while the backup ran (the positive control: writes were live)").toBeGreaterThan(0);
    for (const s of [seen, siblingSeen]) {
      expect([s.publishFailures, s.kvFailures, s.disconnects, s.closed]).toEqual([[], [], [], false]);
    }
    expect(revokesAll(r, "alpha")).toBeUndefined();
    expect((await statusOf(r)).journal).toBeNull();
    // The manifest: each stream from its snapshot's start, and how far it grew during it.
    const { manifest } = verifyArtifact(out);
    expect(manifest.consistency).toBe("per-stream");
    const events = manifest.streams.find((x) => x.name === "cotal_events_alpha");
    expect(events?.state.messages).toBeGreaterThanOrEqual(4_000);
    console.log(`[backup-online] live: ${during} publishes during the backup; streams ${JSON.stringify(manifest.streams.map((x) => [x.name, x.state.last_seq, x.grewTo ?? "-"]))}`);
    // Restored into the emptied namespace, every stream lies within its manifest range (restore-streams.ts restoredMismatch).
    await dropStreams(r, up.url, "alpha", manifest.streams.map((x) => x.name));
    const restored = parseJson<{ streams: { name: string; first_seq: number; last_seq: number; messages: number }[] }>(ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--json"])));
    for (const m of manifest.streams) {
      const got = restored.streams.find((x) => x.name === m.name);
      expect(got, m.name).toBeDefined();
      expect(got?.last_seq, m.name).toBeGreaterThanOrEqual(m.state.last_seq);
      expect(got?.last_seq, m.name).toBeLessThanOrEqual(m.grewTo ?? m.state.last_seq);
    }
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("control: the same application through a --quiesce backup is disconnected (the quiesce refuses every user of the tenant)", async () => {
    const { r, up, alpha } = await twoSpaces("cotal-quiesce-ctl-", 50);
    const app = await AppClient.start(up.url, alpha, "alpha");
    await app.writable();
    ok(await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", join(r.root, "..", "alpha.q")]));
    const seen = await app.stop();
    expect(seen.disconnects.length).toBeGreaterThan(0);
  });

  it("a bad --out is refused before anything is read: an existing path, a missing parent; the tenant is never touched", async () => {
    const { r, up, alpha } = await twoSpaces("cotal-live-out-", 20);
    const app = await AppClient.start(up.url, alpha, "alpha");
    const taken = join(r.root, "..", "taken");
    writeFileSync(taken, "x");
    const exists = await r.cotal(["space", "backup", "alpha", "--out", taken]);
    expect([exists.code, exists.stderr]).toEqual([8, expect.stringMatching(/\[io\][\s\S]*next: cotal --root \S+ space backup alpha --out \S+taken\.1/)]);
    const missing = await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "no", "such", "dir")]);
    expect([missing.code, missing.stderr]).toEqual([8, expect.stringMatching(/\[io\][\s\S]*next: mkdir -p /)]);
    const seen = await app.stop();
    expect([seen.publishFailures, seen.disconnects, seen.closed]).toEqual([[], [], false]);
    // The printed exit runs as printed and ends in a backup.
    const line = exists.stderr.split("\n").find((l) => l.includes("next: "))?.split("next: ")[1]?.trim() ?? "";
    const rerun = await r.cotal(line.split(" ").slice(1));
    expect(rerun.code, rerun.stderr).toBe(0);
  });
});

describe("online per-space backup", () => {
  it("quiesces only the tenant: its polled cred never connects from the quiesce proof to the last snapshot, connects after the lift; the sibling keeps working; the artifact restores offline", VERSION_DEPENDENT, async () => {
    const { r, up, alpha, beta } = await twoSpaces("cotal-online-");
    const before = await spaceFacts(up.url, alpha);
    const betaBefore = await spaceFacts(up.url, beta);
    const poller = new CredentialPoller({ url: up.url, creds: alpha, concurrency: 4, maxDurationMs: 120_000 }).start();
    await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 }); // positive control: alpha connects before
    const watcher = await SurvivorWatcher.start({ url: up.url, creds: beta });
    const tenant = await SurvivorWatcher.start({ url: up.url, creds: alpha }); // a long-lived client of the quiesced tenant

    const out = join(r.root, "..", "alpha.online");
    const res = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out, "--json"]);
    const backup = parseJson<OnlineBackupResult>(ok(res));
    expect(backup.mode).toBe("online");
    if (!backup.timeline) throw new Error("a --quiesce backup reports its timeline");
    const { quiesceProvenAt, snapshotsDoneAt, liftProvenAt } = backup.timeline;
    expect(quiesceProvenAt).toBeLessThan(snapshotsDoneAt);
    // positive control after: the same cred connects again once the lift is proven
    const liftMono = toMono(liftProvenAt);
    await poller.waitForAttempt((a) => a.ok && a.startedAt > liftMono, { timeoutMs: 10_000 });
    const report = await poller.stop();
    const t0 = toMono(quiesceProvenAt);
    const t1 = toMono(snapshotsDoneAt);
    expect(report.attempts.filter((a) => a.startedAt >= t0 && a.endedAt <= t1).length, "the poller was polling during the window").toBeGreaterThan(0);
    expect(report.successesBetween(t0, t1, "within"), "alpha connected while quiesced").toBe(0);
    // 2.10+: the evictor found no connection left (the revocation evicted them); 2.9.10 has no KICK and the reload dropped them
    expect(backup.eviction?.outcome).toBe(liveServer.kick ? "none" : "skipped");

    // the tenant's own long-lived client was evicted (on every server: the revocation, not only a 2.9 reload) and got back in only after the lift
    await tenant.waitFor("reconnect", { since: t1, timeoutMs: 15_000 });
    const tenantEvents = await tenant.stop();
    expect(tenantEvents.filter((e) => e.type === "disconnect" && e.at <= t1).length, "the tenant's client was evicted by the quiesce").toBeGreaterThan(0);
    expect(tenantEvents.filter((e) => e.type === "reconnect" && e.at >= t0 && e.at <= t1)).toEqual([]);

    // the sibling: 0 disconnects where a reload keeps JWT clients (2.14.8+); 2.9.10 drops it at each of the two reloads
    if (!liveServer.reloadKeepsJwtClients) await watcher.waitFor("reconnect");
    expect(await connects(up.url, beta)).toBe(true);
    const drops = (await watcher.stop()).filter((e) => e.type === "disconnect").length;
    if (liveServer.reloadKeepsJwtClients) expect(drops).toBe(0);
    else {
      expect(drops).toBeGreaterThanOrEqual(1);
      expect(drops).toBeLessThanOrEqual(2);
    }

    // complete artifact, lifted tenant, empty journal
    const { manifest } = verifyArtifact(out);
    expect(manifest.streams.map((s) => s.name).sort()).toEqual(["KV_cotal_state_alpha", "cotal_events_alpha"]);
    expect(manifest.streams.find((s) => s.name === "cotal_events_alpha")?.state.messages).toBe(400);
    expect(revokesAll(r, "alpha")).toBeUndefined();
    expect(existsSync(r.layout.journalFile)).toBe(false);
    expect((await statusOf(r)).quiesced).toEqual([]);
    expect(await spaceFacts(up.url, beta)).toEqual(betaBefore);

    // the online artifact restores through the offline path: rm, add (a new account), cut, restore --rebind-account, up
    ok(await r.cotal(["space", "rm", "alpha", "--yes"]));
    ok(await r.cotal(["space", "add", "alpha"]));
    ok(await r.cotal(["down", "--preserve-state"]));
    ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account"]));
    const again = await upJson(r);
    const after = await spaceFacts(again.url, await credsText(r, "alpha"));
    expect(after.streams.cotal_events_alpha).toEqual(before.streams.cotal_events_alpha);
    expect(after.streams.KV_cotal_state_alpha).toEqual(before.streams.KV_cotal_state_alpha);
    expect(after.consumers).toEqual(before.consumers);
  });

  it("with COTAL_TEST_UNSAFE_SKIP_QUIESCE the polled cred connects during the snapshot (the switch does what scripts/ablate.sh relies on)", async () => {
    const { r, up, alpha } = await twoSpaces("cotal-online-ablate-", 1500);
    const poller = new CredentialPoller({ url: up.url, creds: alpha, concurrency: 4, maxDurationMs: 120_000 }).start();
    await poller.waitForAttempt((a) => a.ok, { timeoutMs: 5_000 });
    const out = join(r.root, "..", "alpha.ablated");
    const res = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out, "--json"], { env: { COTAL_TEST_UNSAFE_SKIP_QUIESCE: "1" } });
    const backup = parseJson<OnlineBackupResult>(ok(res));
    const report = await poller.stop();
    if (!backup.timeline) throw new Error("a --quiesce backup reports its timeline");
    const connected = report.successesBetween(toMono(backup.timeline.quiesceProvenAt), toMono(backup.timeline.snapshotsDoneAt), "within");
    expect(connected).toBeGreaterThan(0);
    expect(revokesAll(r, "alpha")).toBeUndefined();
  });

  // artifact: what the crash leaves at --out (partial: a directory without manifest.json)
  const cuts: { point: string; action: "exit" | "kill"; artifact: "complete" | "partial" | "none"; quiesced: boolean; converge: "up" | "rerun" }[] = [
    { point: "backup-quiesce-journaled", action: "exit", artifact: "none", quiesced: false, converge: "up" },
    { point: "backup-quiesced", action: "kill", artifact: "none", quiesced: true, converge: "up" },
    { point: "backup-first-chunk", action: "kill", artifact: "partial", quiesced: true, converge: "up" },
    { point: "backup-first-chunk", action: "kill", artifact: "partial", quiesced: true, converge: "rerun" },
    { point: "backup-manifest", action: "exit", artifact: "partial", quiesced: true, converge: "up" },
    { point: "backup-published", action: "kill", artifact: "complete", quiesced: true, converge: "rerun" },
    { point: "backup-lifted", action: "exit", artifact: "complete", quiesced: false, converge: "up" },
  ];
  for (const c of cuts) {
    it(`${c.action} at ${c.point}: ${c.converge === "up" ? "the printed next (cotal up)" : "the re-run"} converges to a lifted tenant and ${c.artifact === "complete" || c.converge === "rerun" ? "a complete artifact" : "no artifact"}`, async () => {
      const { r, up, alpha } = await twoSpaces(`cotal-online-${c.point}-`, 200);
      const out = join(r.root, "..", "alpha.cut");
      const cut = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out], { env: { COTAL_FAILPOINT: `${c.point}:${c.action}` } });
      expect(cut.code, cut.stderr).not.toBe(0);
      expect(typeof revokesAll(r, "alpha") === "number").toBe(c.quiesced);
      if (c.quiesced) expect(await connects(up.url, alpha)).toBe(false);
      expect(existsSync(out)).toBe(c.artifact !== "none");
      expect(existsSync(join(out, "manifest.json"))).toBe(c.artifact === "complete");

      // status names the quiesce and the way out; another mutating verb refuses naming it
      const st = await statusOf(r);
      expect(st.journal?.op).toBe("quiesce");
      expect(st.quiesced.map((q) => [q.space, q.next.split("   #")[0]])).toEqual([["alpha", `cotal --root ${r.root} up`]]);
      const refused = await r.cotal(["space", "add", "gamma"]);
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toMatch(/journal-blocked/);
      expect(refused.stderr).toMatch(/next: cotal (--root \S+ )?up/);

      if (c.converge === "up") ok(await r.cotal(["up", "--detach", "--port", String(r.port)]));
      else ok(await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out]));

      expect(revokesAll(r, "alpha")).toBeUndefined();
      expect(await connects(up.url, alpha)).toBe(true);
      expect(existsSync(r.layout.journalFile)).toBe(false);
      expect((await statusOf(r)).quiesced).toEqual([]);
      const wantArtifact = c.artifact === "complete" || c.converge === "rerun";
      if (wantArtifact) expect(verifyArtifact(out).manifest.streams.length).toBe(2);
      else expect(existsSync(out)).toBe(false);
    });
  }

  it("a plain down while quiesced, then the cold up boots the quiesced JWT and lifts it right after the boot", async () => {
    const { r, alpha } = await twoSpaces("cotal-online-cold-", 50);
    const out = join(r.root, "..", "alpha.cold");
    const cut = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out], { env: { COTAL_FAILPOINT: "backup-first-chunk:kill" } });
    expect(cut.code).not.toBe(0);
    expect(typeof revokesAll(r, "alpha")).toBe("number");
    const refusedDown = await r.cotal(["down", "--preserve-state"]);
    expect(refusedDown.code, refusedDown.stderr).toBe(3); // a cut over a quiesced tenant would preserve it quiesced
    expect(refusedDown.stderr).toMatch(/next: cotal (--root \S+ )?up/);
    ok(await r.cotal(["down"]));
    const again = await upJson(r);
    expect(again.notes.join("\n")).toMatch(/lifted the quiesce of space alpha/);
    expect(revokesAll(r, "alpha")).toBeUndefined();
    expect(await connects(again.url, alpha)).toBe(true);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(r.layout.journalFile)).toBe(false);
  });

  it("while the backup runs (its owner alive) other verbs refuse as busy, and status names the running backup", async () => {
    const { r, up, alpha } = await twoSpaces("cotal-online-busy-", 10);
    const out = join(r.root, "..", "alpha.busy");
    // Parked once quiesced (a barrier, not a fixed 6 s sleep) until the checks below are done.
    const gate = barrierDir(r, "busy");
    const running = r.cotal(["space", "backup", "alpha", "--quiesce", "--out", out, "--json"], { env: { COTAL_FAILPOINT: `backup-quiesced:barrier:${gate}:2` } });
    await barrierReached(gate, "the backup quiesced");
    expect(readFileSync(r.layout.journalFile, "utf8")).toContain('"quiesced"');
    const st = await statusOf(r);
    expect(st.quiesced).toEqual([expect.objectContaining({ space: "alpha", source: "both", owner: expect.objectContaining({ status: "alive" }), next: expect.stringMatching(/^while kill -0 \d+ 2>\/dev\/null; do sleep 1; done; cotal (--root \S+ )?status/) })]);
    const busy = await r.cotal(["space", "add", "gamma"]);
    expect(busy.code, busy.stderr).toBe(4);
    expect(busy.stderr).toMatch(/lock-held/);
    expect(busy.stderr).toMatch(/next: while kill -0 \d+ 2>\/dev\/null; do sleep 1; done; cotal --root \S+ space add gamma/);
    expect(await connects(up.url, alpha)).toBe(false);
    releaseBarrier(gate);
    ok(await running);
    expect(await connects(up.url, alpha)).toBe(true);
    ok(await r.cotal(["space", "add", "gamma"])); // the positive control: the same verb passes once the backup lifted
  });

  it("a tenant whose JWT revokes all users with no entry is shown quiesced, and `cotal up` lifts it", async () => {
    const { r, up, alpha } = await twoSpaces("cotal-online-stray-", 10);
    // a backup killed inside the lift's saga leaves the JWT quiesced; simulate the bare state: the entry cleared by hand
    const cut = await r.cotal(["space", "backup", "alpha", "--quiesce", "--out", join(r.root, "..", "x")], { env: { COTAL_FAILPOINT: "backup-quiesced:exit" } });
    expect(cut.code).toBe(86);
    expect((JSON.parse(readFileSync(r.layout.journalFile, "utf8")) as { op: string }).op).toBe("quiesce");
    rmSync(r.layout.journalFile);
    const st = await statusOf(r);
    expect(st.quiesced).toEqual([expect.objectContaining({ space: "alpha", source: "jwt", next: expect.stringMatching(/^cotal (--root \S+ )?up/) })]);
    expect(await connects(up.url, alpha)).toBe(false);
    ok(await r.cotal(["up", "--detach", "--port", String(r.port)]));
    expect(revokesAll(r, "alpha")).toBeUndefined();
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("a corrupted message in the store refuses the backup with snapshot-failed (the server's checksum pass) and lifts the tenant; COTAL_TEST_UNSAFE_SKIP_STORE_CHECK backs it up silently", VERSION_DEPENDENT, async (ctx) => {
    const { r, up, alpha } = await twoSpaces("cotal-online-jsck-", 50);
    // 2.15.3's snapshot check reports no bad message for this flipped payload byte, broker running or
    // restarted (seen 2026-12-01, not yet explained): the cell shows the guard on 2.9 and 2.14 only.
    if (/^2\.(1[5-9]|[2-9]\d)\./.test(up.serverVersion)) ctx.skip(`nats-server ${up.serverVersion}: its snapshot check does not see the flipped byte`);
    const key = loadSpaceAccount(r.layout, "alpha")?.publicKey ?? "";
    const blk = join(r.layout.storeDir, "jetstream", key, "streams", "cotal_events_alpha", "msgs", "1.blk");
    // seedSpace's payloads are 2048 × "a": one byte flipped inside a payload breaks that message's checksum, not the framing
    const bytes = readFileSync(blk);
    const at = bytes.indexOf("a".repeat(64), Math.floor(bytes.length / 2));
    expect(at).toBeGreaterThan(0);
    bytes[at + 10] = "b".charCodeAt(0);
    writeFileSync(blk, bytes);

    // the ablation first (2.9.10's check also drops the bad message from the store): without the check the corrupted block is backed up, exit 0
    const silent = join(r.root, "..", "alpha.unchecked");
    ok(await r.cotal(["space", "backup", "alpha", "--out", silent], { env: { COTAL_TEST_UNSAFE_SKIP_STORE_CHECK: "1" } }));
    expect(existsSync(join(silent, "manifest.json"))).toBe(true);

    const out = join(r.root, "..", "alpha.checked");
    const refused = await r.cotal(["space", "backup", "alpha", "--out", out]);
    expect(refused.code, refused.stderr).toBe(6);
    expect(refused.stderr).toMatch(/\[snapshot-failed\]/);
    expect(refused.stderr).toMatch(/bad messages/);
    expect(existsSync(join(out, "manifest.json"))).toBe(false);
    expect(revokesAll(r, "alpha")).toBeUndefined(); // failed closed to lifted
    expect(await connects(up.url, alpha)).toBe(true);
  });
});
