import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, tempRoot } from "@cotal/harness";
import { completeArtifacts } from "@cotal/jobs";
import { jetstreamManager } from "@nats-io/jetstream";
import { startRedis, startWorker, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { until } from "../fixtures/until.js";
import { connectCreds } from "../fixtures/nats.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await disposeLiveRoots();
});
afterAll(harnessTeardown);

describe("scheduled per-space backups (BullMQ job scheduler)", () => {
  it("run online on their cadence through a worker (the broker never stops), keep only K dated artifacts; a run finding the tenant quiesced by another backup skips with its reason", async () => {
    const { r, up } = await upRoot();
    const pidBefore = (await statusOf(r)).broker.pid;
    expect(pidBefore).toBeGreaterThan(0);
    const alpha = await credsText(r, "alpha");
    const nc = await connectCreds(up.url, alpha);
    await (await jetstreamManager(nc)).jetstream().publish("cotal.alpha.events.hello", "before the backups");
    await nc.close();

    const redis: LiveRedis = await startRedis();
    cleanups.push(() => redis.stop());
    const out = await tempRoot("cotal-scheduled-");
    cleanups.push(() => out.cleanup());
    const env = { REDIS_URL: redis.url };
    const schedule = ["space", "backup", "alpha", "--out", out.path, "--every", "3s", "--keep", "2", "--queue"];
    const first = await r.cotal(schedule, { env });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/scheduled backups of alpha \(every 3s\)/);
    const again = await r.cotal(schedule, { env }); // upsert: the same scheduler, not a second one
    expect(again.code, again.stderr).toBe(0);
    expect(await redis.cli("--scan", "--pattern", "cotal:space-backup.*:repeat:*")).not.toBe("");

    const w: LiveWorker = startWorker("cli", { root: r.root, redisUrl: redis.url });
    cleanups.push(() => w.stop());
    await w.ready();
    const runs = () => (w.log().match(/backup of alpha: online, \d+ bytes/g) ?? []).length;
    await until("three scheduled runs", async () => runs() >= 3 || undefined, 90_000, 250);
    // another backup holds alpha quiesced for 8 s: the scheduled runs in that window skip, naming it
    const manual = r.cotal(["space", "backup", "alpha", "--quiesce", "--out", `${out.path}/manual`], { env: { COTAL_FAILPOINT: "backup-quiesced:sleep:8000" } });
    await until("a skipped run", async () => /backup of alpha: skipped: space alpha stands quiesced by an online backup/.test(w.log()) || undefined, 30_000, 250);
    expect((await manual).code).toBe(0);
    const done = runs();
    await until("a run after the other backup lifted", async () => runs() > done || undefined, 30_000, 250);
    expect(await w.stop()).toBe(0);
    // the skip is the job's result, not a failure
    const keys = (await redis.cli("--scan", "--pattern", "cotal:*")).split("\n").filter((k) => /:\w[\w-]*$/.test(k));
    const results: string[] = [];
    for (const k of keys) if ((await redis.cli("type", k)) === "hash") results.push(await redis.cli("hget", k, "returnvalue"));
    const skipped = results.filter((v) => v.includes('"outcome":"skipped"'));
    expect(skipped.length, results.join("\n")).toBeGreaterThan(0);
    expect(skipped[0]).toMatch(/"reason":"space alpha stands quiesced by an online backup/);
    expect((await statusOf(r)).broker.pid, "the broker was never stopped").toBe(pidBefore);

    const kept = completeArtifacts(out.path, "alpha");
    expect(kept.length).toBe(2); // K, although at least three ran
    expect(runs()).toBeGreaterThanOrEqual(3);
    expect([...kept].sort()).toEqual(kept);
    const st = await statusOf(r);
    expect(st.broker.running).toBe(true);
    expect(st.state).toBe("clean");
    expect(st.journal).toBeNull();
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("space rm and space restore run through a worker too (the restore online: the broker keeps running)", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta", "gamma"])).code).toBe(0);
    const nc = await connectCreds(up.url, await credsText(r, "beta"));
    await (await jetstreamManager(nc)).jetstream().publish("cotal.beta.events.kept", "survives the round trip");
    await nc.close();
    const art = await tempRoot("cotal-queued-restore-");
    cleanups.push(() => art.cleanup());
    expect((await r.cotal(["down", "--preserve-state"])).code).toBe(0);
    const backup = await r.cotal(["space", "backup", "beta", "--out", `${art.path}/beta`]);
    expect(backup.code, backup.stderr).toBe(0);
    expect((await r.cotal(["up", "--detach"])).code).toBe(0);

    const redis: LiveRedis = await startRedis();
    cleanups.push(() => redis.stop());
    const w: LiveWorker = startWorker("cli", { root: r.root, redisUrl: redis.url });
    cleanups.push(() => w.stop());
    await w.ready();
    const env = { REDIS_URL: redis.url };
    const rmGamma = await r.cotal(["space", "rm", "gamma", "--yes", "--queue"], { env });
    expect(rmGamma.code, rmGamma.stderr).toBe(0);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta"]);

    // beta goes away and comes back as a new account; its data only returns through a restore
    expect((await r.cotal(["space", "rm", "beta", "--yes"])).code).toBe(0);
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const pidBefore = (await statusOf(r)).broker.pid;
    const restore = await r.cotal(["space", "restore", "beta", "--from", `${art.path}/beta`, "--rebind-account", "--queue"], { env, timeoutMs: 120_000 });
    expect(restore.code, restore.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.broker.running).toBe(true);
    expect(st.broker.pid, "the queued restore ran online").toBe(pidBefore);
    expect(st.journal).toBeNull();
    const nc2 = await connectCreds(up.url, await credsText(r, "beta", "after"));
    const msg = await (await jetstreamManager(nc2)).streams.getMessage("cotal_events_beta", { last_by_subj: "cotal.beta.events.kept" });
    expect(msg?.string()).toBe("survives the round trip");
    await nc2.close();
  });

  it("a queued restore --replace --yes runs online; re-delivered after it completed (its worker died before the ack) it answers from its receipt and keeps what the tenant wrote since", async () => {
    const { r, up } = await upRoot();
    const alpha = await credsText(r, "alpha");
    const subject = "cotal.alpha.events.k";
    const publish = async (body: string) => {
      const nc = await connectCreds(up.url, alpha);
      await (await jetstreamManager(nc)).jetstream().publish(subject, body);
      await nc.close();
    };
    const last = async () => {
      const nc = await connectCreds(up.url, alpha);
      try {
        return (await (await jetstreamManager(nc)).streams.getMessage("cotal_events_alpha", { last_by_subj: subject }))?.string();
      } finally {
        await nc.close();
      }
    };
    await publish("v1 (in the backup)");
    const art = await tempRoot("cotal-queued-replace-");
    cleanups.push(() => art.cleanup());
    const from = `${art.path}/alpha`;
    expect((await r.cotal(["space", "backup", "alpha", "--out", from])).code).toBe(0);
    await publish("v2 (replaced by the restore)");

    const redis: LiveRedis = await startRedis();
    cleanups.push(() => redis.stop());
    const env = { REDIS_URL: redis.url };
    const stall = { COTAL_JOBS_LOCK_DURATION_MS: "1000", COTAL_JOBS_STALLED_INTERVAL_MS: "500" };
    // refused before anything is enqueued, as the direct verb
    const unconfirmed = await r.cotal(["space", "restore", "alpha", "--from", from, "--replace", "--queue", "--no-wait"], { env });
    expect(unconfirmed.code, unconfirmed.stderr).toBe(3);
    expect(unconfirmed.stderr).toMatch(/confirmation-required/);
    expect(unconfirmed.stderr).toMatch(/next: cotal --root \S+ space restore alpha --from \S+ --replace --queue --no-wait --yes\n/); // every flag kept, --yes added (cli confirm.ts)

    // the first worker restores, then dies after the journal is cleared and before the job's ack
    const first: LiveWorker = startWorker("cli", { root: r.root, redisUrl: redis.url, env: { ...stall, COTAL_FAILPOINT: "restore-online-done:exit" } });
    cleanups.push(() => first.kill());
    await first.ready();
    const queued = await r.cotal(["space", "restore", "alpha", "--from", from, "--replace", "--yes", "--queue", "--no-wait"], { env });
    expect(queued.code, queued.stderr).toBe(0);
    await until("the first worker dies at its failpoint", async () => (first.child.exitCode !== null ? true : undefined), 60_000, 100);
    expect(first.child.exitCode).toBe(86);
    expect(first.log()).not.toMatch(/restore of alpha: online/); // it never reached the ack
    expect(await last(), "the restore replaced v2").toBe("v1 (in the backup)");
    expect((await statusOf(r)).journal).toBeNull();
    await publish("v3 (written after the restore)");

    // the job is re-delivered to a second worker: the root's receipt says it ran, so nothing is restored again
    const second: LiveWorker = startWorker("cli", { root: r.root, redisUrl: redis.url, env: stall });
    cleanups.push(() => second.stop());
    await second.ready();
    const line = await until("the re-delivered restore", async () => /restore of alpha: (already restored[^\n]*|online[^\n]*)/.exec(second.log())?.[1], 60_000, 200);
    expect(line).toMatch(/^already restored by request /);
    expect(await last(), "the tenant's write after the restore survives the re-delivery").toBe("v3 (written after the restore)");
    expect(await second.stop()).toBe(0);
    const st = await statusOf(r);
    expect(st.journal).toBeNull();
    expect(await connects(up.url, alpha)).toBe(true);
  });

  it("refuses a schedule without --queue, or with a cadence that is neither cron nor a duration", async () => {
    const { r } = await upRoot();
    const noQueue = await r.cotal(["space", "backup", "alpha", "--out", "/tmp/x", "--every", "1d"]);
    expect(noQueue.code).toBe(2);
    expect(noQueue.stderr).toMatch(/--every and --queue/);
    const bad = await r.cotal(["space", "backup", "alpha", "--out", "/tmp/x", "--every", "often", "--queue"], { env: { REDIS_URL: "redis://127.0.0.1:1" } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/neither a duration/);
  });
});
