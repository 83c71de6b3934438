import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { harnessTeardown } from "@cotal/harness";
import { jetstream } from "@nats-io/jetstream";
import { connectCreds } from "../fixtures/nats.js";
import type { CutEntry } from "@cotal/core/backup";
import { type LiveRoot } from "../fixtures/live-root.js";
import { ok, seedSpace, spaceFacts, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, FAILPOINT_EXIT, upRoot } from "../fixtures/tenants.js";
import { barrierReached } from "../fixtures/barrier.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

function journal(r: LiveRoot): CutEntry {
  return JSON.parse(readFileSync(r.layout.journalFile, "utf8")) as CutEntry;
}

/** No stray attempt dirs or isolated-broker processes serving them once an attempt is cleaned. */
function attemptDirs(r: LiveRoot): string[] {
  return readdirSync(r.layout.maintenanceDir).filter((f) => f.startsWith("attempt-"));
}

async function seededCutRoot(): Promise<{ r: LiveRoot; url: string }> {
  const { r, up } = await upRoot([], "cotal-bfault-");
  ok(await r.cotal(["space", "add", "beta"]));
  await seedSpace(up.url, await credsText(r, "alpha", "tester"), "alpha", 400, 25, 2048);
  ok(await r.cotal(["down", "--preserve-state"]));
  return { r, url: up.url };
}

/** alpha backed up with its data, then removed and re-added empty under a new account, behind a ready cut. */
async function backedUpThenEmptied() {
  const { r, url } = await seededCutRoot();
  const out = join(r.root, "..", "alpha.bak");
  ok(await r.cotal(["up", "--detach"]));
  const before = await spaceFacts(url, await credsText(r, "alpha", "tester"));
  ok(await r.cotal(["down", "--preserve-state"]));
  ok(await r.cotal(["space", "backup", "alpha", "--out", out]));
  ok(await r.cotal(["up", "--detach"]));
  ok(await r.cotal(["space", "rm", "alpha", "--yes"]));
  ok(await r.cotal(["space", "add", "alpha"]));
  ok(await r.cotal(["down", "--preserve-state"]));
  return { r, out, before };
}

describe("backup failpoints leave no complete artifact, and a clean retry succeeds", () => {
  it.each(["backup-snapshot-start", "backup-first-chunk", "backup-snapshot-close", "backup-manifest"])("%s", async (fp) => {
    const { r } = await seededCutRoot();
    const out = join(r.root, "..", "alpha.bak");
    // exit: the process dies with no clean-up of its own; the journal's claim is what recovery trusts
    const died = await r.cotal(["space", "backup", "alpha", "--out", out], { env: { COTAL_FAILPOINT: `${fp}:exit` } });
    expect(died.code, died.stderr).toBe(FAILPOINT_EXIT);
    expect(existsSync(join(out, "manifest.json"))).toBe(false);
    const claim = journal(r).attempt;
    expect(claim?.kind).toBe("backup");
    const blocked = await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "other")]);
    expect(blocked.code).toBe(3);
    expect(blocked.stderr).toContain(`cotal clean restore-attempt --attempt ${claim?.id}`);
    ok(await r.cotal(["clean", "restore-attempt", "--attempt", claim?.id ?? ""]));
    expect(existsSync(out)).toBe(false);
    expect(attemptDirs(r)).toEqual([]);
    expect(journal(r).attempt).toBeUndefined();
    expect(journal(r).state).toBe("ready");

    // throw: the attempt fails closed by itself (ready, destination absent)
    const thrown = await r.cotal(["space", "backup", "alpha", "--out", out], { env: { COTAL_FAILPOINT: `${fp}:throw` } });
    expect(thrown.code).toBe(1);
    expect(existsSync(out)).toBe(false);
    expect(journal(r).attempt).toBeUndefined();

    // positive control: the clean retry on the same path publishes a complete artifact
    ok(await r.cotal(["space", "backup", "alpha", "--out", out]));
    expect(existsSync(join(out, "manifest.json"))).toBe(true);
    expect(attemptDirs(r)).toEqual([]);
  });
});

describe("a snapshot cut short is never a backup", () => {
  it("the isolated broker killed mid-snapshot: snapshot-failed, no manifest; the retry publishes a complete artifact", async () => {
    const { r, up } = await upRoot([], "cotal-bkill-");
    ok(await r.cotal(["space", "add", "beta"]));
    await seedSpace(up.url, await credsText(r, "alpha", "tester"), "alpha", 10, 5);
    // Incompressible bytes, so the snapshot (tar + s2) really is ~12 MB: about 90 chunks.
    const nc = await connectCreds(up.url, await credsText(r, "alpha", "tester"));
    try {
      const js = jetstream(nc);
      for (let i = 0; i < 3000; i++) await js.publish(`cotal.alpha.events.r${i % 5}`, randomBytes(4096));
    } finally {
      await nc.close();
    }
    ok(await r.cotal(["down", "--preserve-state"]));
    const out = join(r.root, "..", "alpha.bak");
    const hold = join(r.root, "..", `hold-snap-${Date.now()}`);
    mkdirSync(hold, { recursive: true });
    // Held 16 chunks into the big events stream (the last one snapshotted): the kill lands mid-stream.
    const backup = r.cotal(["space", "backup", "alpha", "--out", out], { env: { COTAL_FAILPOINT: `backup-mid-stream:barrier:${hold}:2` } });
    await barrierReached(hold, "the backup's first chunk");
    const pid = journal(r).attempt?.brokers[0]?.pid;
    expect(pid).toBeDefined();
    process.kill(pid as number, "SIGKILL");
    await new Promise((res) => setTimeout(res, 300));
    writeFileSync(join(hold, "test.release"), "");
    const died = await backup;
    expect(died.code, died.stderr).toBe(6);
    expect(died.stderr).toMatch(/\[snapshot-failed\]/);
    expect(existsSync(join(out, "manifest.json"))).toBe(false);
    // positive control: the same backup, uninterrupted, completes
    ok(await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "alpha.bak2")]));
    expect(existsSync(join(r.root, "..", "alpha.bak2", "manifest.json"))).toBe(true);
  });
});

describe("the target installs the quarantine's re-snapshot", () => {
  it("staged bytes corrupted after the quarantine verified them never reach the store", async () => {
    const { r, out, before } = await backedUpThenEmptied();
    const hold = join(r.root, "..", `hold-q-${Date.now()}`);
    mkdirSync(hold, { recursive: true });
    const restore = r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account"], { env: { COTAL_FAILPOINT: `restore-quarantine-done:barrier:${hold}:2` } });
    await barrierReached(hold, "the restore's quarantine done", 60_000);
    const claim = journal(r).attempt;
    const staged = join(r.layout.maintenanceDir, `attempt-${claim?.id}`, "artifact");
    const files = readdirSync(staged, { recursive: true }).map(String).filter((f) => f.endsWith(".snap"));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) writeFileSync(join(staged, f), Buffer.alloc(readFileSync(join(staged, f)).length, 0x5a)); // same size, garbage
    writeFileSync(join(hold, "test.release"), "");
    ok(await restore);
    const again = await upJson(r);
    const after = await spaceFacts(again.url, await credsText(r, "alpha", "tester"));
    expect(after.streams.cotal_events_alpha).toEqual(before.streams.cotal_events_alpha);
  });
});

describe("restore failpoints: every stage recovers, and a clean retry restores exactly once", () => {
  it("quarantine and target stages", async () => {
    const { r, out, before } = await backedUpThenEmptied();

    const stages = ["restore-quarantine-begin", "restore-quarantine-stream", "restore-quarantine-verified", "restore-quarantine-done", "restore-target-begin", "restore-target-stream", "restore-target-verified", "restore-target-done"];
    for (const fp of stages) {
      const died = await r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account"], { env: { COTAL_FAILPOINT: `${fp}:exit` } });
      expect(died.code, `${fp}: ${died.stderr}`).toBe(FAILPOINT_EXIT);
      const claim = journal(r).attempt;
      expect(claim?.kind, fp).toBe("restore");
      ok(await r.cotal(["clean", "restore-attempt", "--attempt", claim?.id ?? ""]));
      expect(journal(r).attempt, fp).toBeUndefined();
      expect(attemptDirs(r), fp).toEqual([]);
    }
    // positive control: after every interrupted stage, the clean retry installs each message exactly once
    ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account"]));
    const again = await upJson(r);
    const after = await spaceFacts(again.url, await credsText(r, "alpha", "tester"));
    expect(after.streams.cotal_events_alpha).toEqual(before.streams.cotal_events_alpha);
    expect(after.consumers).toEqual(before.consumers);
  });
});
