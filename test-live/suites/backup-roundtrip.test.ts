import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { loadSpaceAccount } from "@cotal/core/root";
import type { LiveRoot } from "../fixtures/live-root.js";
import type { SpaceBackupResult, SpaceRestoreResult } from "@cotal/core";
import { parseJson } from "../fixtures/live-root.js";
import { ok, seedSpace, spaceFacts, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, upRoot } from "../fixtures/tenants.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

describe("offline per-space backup and restore", () => {
  it("backup → rm → add → restore refuses naming both keys; --rebind-account round-trips; the sibling is untouched", async () => {
    const { r, up } = await upRoot([], "cotal-backup-");
    ok(await r.cotal(["space", "add", "beta"]));
    await seedSpace(up.url, await credsText(r, "alpha", "tester"), "alpha", 300, 40);
    await seedSpace(up.url, await credsText(r, "beta", "tester"), "beta", 120, 7);
    const alphaBefore = await spaceFacts(up.url, await credsText(r, "alpha", "tester"));
    const betaBefore = await spaceFacts(up.url, await credsText(r, "beta", "tester"));
    expect(alphaBefore.streams.cotal_events_alpha?.messages).toBe(300);
    expect(alphaBefore.consumers["cotal_events_alpha/reader"]?.ack_floor).toBe(40);

    // a running broker is backed up online (backup-online.test.ts); a stopped one without a cut refuses
    const online = parseJson<SpaceBackupResult>(ok(await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "online"), "--json"])));
    expect(online.mode).toBe("online");
    ok(await r.cotal(["down"]));
    const noCut = await r.cotal(["space", "backup", "alpha", "--out", join(r.root, "..", "refused")]);
    expect(noCut.code).toBe(6);
    expect(noCut.stderr).toMatch(/cut-required/);
    await upJson(r);

    ok(await r.cotal(["down", "--preserve-state"]));
    const out = join(r.root, "..", "alpha.bak");
    const backup = parseJson<SpaceBackupResult>(ok(await r.cotal(["space", "backup", "alpha", "--out", out, "--json"])));
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as { accountPublicKey: string; streams: { name: string }[]; excluded: { name: string }[]; files: unknown[] };
    expect(manifest.streams.map((s) => s.name).sort()).toEqual(["KV_cotal_state_alpha", "cotal_events_alpha"]);
    expect(manifest.excluded.map((e) => e.name)).toEqual(["KV_cotal_presence_alpha"]);
    // no trust material travels with the artifact
    const all = readFileSync(join(out, "manifest.json"), "utf8") + readFileSync(join(out, "checkpoints.json"), "utf8");
    expect(all).not.toMatch(/\bS[OAUNC][A-Z2-7]{50,}\b/);
    expect(all).not.toMatch(/eyJ[A-Za-z0-9_-]+\.eyJ/);

    // resume, remove, re-add: the name now addresses a new account with freshly provisioned (empty) streams
    await upJson(r);
    ok(await r.cotal(["space", "rm", "alpha", "--yes"]));
    ok(await r.cotal(["space", "add", "alpha"]));
    ok(await r.cotal(["down", "--preserve-state"]));

    const refused = await r.cotal(["space", "restore", "alpha", "--from", out]);
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(/account-mismatch/);
    const newKey = /is now account (A[A-Z2-7]{55})/.exec(refused.stderr)?.[1];
    expect(refused.stderr).toContain(backup.accountPublicKey);
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(backup.accountPublicKey);

    const restored = parseJson<SpaceRestoreResult>(ok(await r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account", "--json"])));
    expect(restored.rebound).toBe(true);
    expect(restored.accountPublicKey).toBe(newKey);

    const again = await upJson(r);
    const alphaAfter = await spaceFacts(again.url, await credsText(r, "alpha", "tester"));
    expect(alphaAfter.streams.cotal_events_alpha).toEqual(alphaBefore.streams.cotal_events_alpha);
    expect(alphaAfter.streams.KV_cotal_state_alpha).toEqual(alphaBefore.streams.KV_cotal_state_alpha);
    expect(alphaAfter.consumers).toEqual(alphaBefore.consumers);
    expect(alphaAfter.streams.KV_cotal_presence_alpha?.messages).toBe(0); // ttl bucket recreated empty
    expect(await spaceFacts(again.url, await credsText(r, "beta", "tester"))).toEqual(betaBefore);

    // a restore into a namespace that now holds data refuses (restore never merges)
    ok(await r.cotal(["down", "--preserve-state"]));
    const occupied = await r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account"]);
    expect(occupied.code, occupied.stderr).toBe(5);
    expect(occupied.stderr).toMatch(/restore-target-not-empty/);
  });

  it("the isolated broker's clone holds only the tenant's account directory (backup and the restore's quarantine), never a sibling's", async () => {
    const { r, up } = await upRoot([], "cotal-backup-scope-");
    ok(await r.cotal(["space", "add", "beta"]));
    await seedSpace(up.url, await credsText(r, "alpha", "tester"), "alpha", 30, 3);
    await seedSpace(up.url, await credsText(r, "beta", "tester"), "beta", 400, 0, 4096);
    const key = (space: string) => loadSpaceAccount(r.layout, space)?.publicKey ?? "";
    const betaKey = key("beta");
    ok(await r.cotal(["down", "--preserve-state"]));
    // positive control: the real store holds the sibling's account directory
    expect(readdirSync(join(r.layout.storeDir, "jetstream"))).toContain(betaKey);

    const out = join(r.root, "..", "alpha-scope.bak");
    const backup = r.cotal(["space", "backup", "alpha", "--out", out, "--json"], { env: { COTAL_FAILPOINT: "backup-started:sleep:2500" } });
    const cloned = await cloneWhileParked(r, "nats", backup);
    expect(cloned, "the backup's clone").toEqual([key("alpha")]);
    const result = parseJson<SpaceBackupResult>(ok(await backup));
    expect(result.streams.find((s) => s.name === "cotal_events_alpha")?.messages).toBe(30);

    await upJson(r);
    ok(await r.cotal(["space", "rm", "alpha", "--yes"]));
    ok(await r.cotal(["space", "add", "alpha"]));
    ok(await r.cotal(["down", "--preserve-state"]));
    const restore = r.cotal(["space", "restore", "alpha", "--from", out, "--rebind-account", "--json"], { env: { COTAL_FAILPOINT: "restore-quarantine-started:sleep:2500" } });
    const quarantined = await cloneWhileParked(r, "quarantine", restore);
    expect(quarantined, "the restore's quarantine clone").toEqual([key("alpha")]);
    const restored = parseJson<SpaceRestoreResult>(ok(await restore));
    expect(restored.streams.find((s) => s.name === "cotal_events_alpha")?.messages).toBe(30);
    // the sibling's store is untouched by either
    const again = await upJson(r);
    expect((await spaceFacts(again.url, await credsText(r, "beta", "tester"))).streams.cotal_events_beta?.messages).toBe(400);
  });
});

/** The account directories in the attempt's clone (`<attempt>/<dir>/jetstream`) while the verb is parked at its broker's start. */
async function cloneWhileParked(r: LiveRoot, dir: string, verb: Promise<unknown>): Promise<string[]> {
  let done = false;
  void verb.finally(() => (done = true));
  while (!done) {
    const attempts = readdirSync(r.layout.maintenanceDir).filter((n) => n.startsWith("attempt-"));
    for (const a of attempts) {
      try {
        // read once the isolated broker is ready on the clone (the verb parks at the failpoint then):
        // at start the server briefly creates and removes a directory for each JetStream account it loads
        const logs = readdirSync(join(r.layout.maintenanceDir, a)).filter((n) => n.endsWith(".log") && !n.includes("stdio"));
        if (logs.some((l) => readFileSync(join(r.layout.maintenanceDir, a, l), "utf8").includes("Server is ready"))) {
          return readdirSync(join(r.layout.maintenanceDir, a, dir, "jetstream")).sort();
        }
      } catch {
        // not cloned yet
      }
    }
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`the verb finished before its clone was seen under ${r.layout.maintenanceDir}/attempt-*/${dir}`);
}
