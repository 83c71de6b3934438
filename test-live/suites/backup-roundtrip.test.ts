import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { SpaceBackupResult, SpaceRestoreResult } from "@cotal/saga";
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
    ok(await r.cotal(["space", "rm", "alpha"]));
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
});
