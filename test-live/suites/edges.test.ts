import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, runCotal, spawnCotal, tempRoot } from "@cotal/harness";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectAsAccount } from "@cotal/core/broker";
import { loadBrokerTrust, loadSpaceAccount, saveSpaceAccount, toAccountRecord } from "@cotal/core/root";
import { createAccountTrust, createBrokerTrust } from "@cotal/core/trust";
import { parseJson } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { barrierReached } from "../fixtures/barrier.js";

// Edges of the CLI contract: every refusal is typed, has a documented exit code and a next step,
// and prints no stack trace; nothing destructive starts before what it needs is validated.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

const NO_STACK = /\n\s+at .+:\d+:\d+/;

describe("edges", () => {
  it("space rm with a corrupt broker.json refuses before deleting any stream", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const beta = await credsText(r, "beta");
    const good = readFileSync(r.layout.brokerFile);
    writeFileSync(r.layout.brokerFile, "{ not json", { mode: 0o600 });
    const rm = await r.cotal(["space", "rm", "beta", "--yes"]);
    expect(rm.code, rm.stderr).toBe(3);
    expect(rm.stderr).toMatch(/\[corrupt-record\]/);
    expect(rm.stderr).not.toMatch(NO_STACK);
    expect(existsSync(r.layout.journalFile)).toBe(false); // refused before the journal, so before the streams
    writeFileSync(r.layout.brokerFile, good, { mode: 0o600 });
    expect(await connects(up.url, beta)).toBe(true);
    const again = await r.cotal(["space", "rm", "beta", "--yes", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(parseJson<{ deletedStreams: string[] }>(again).deletedStreams.length).toBeGreaterThan(0); // they were still there
  });

  it("a root reached through a symlink is the same root: same lease key, same store, adds prove", async () => {
    const { r } = await upRoot();
    const link = join(r.root, "..", "link-to-root");
    symlinkSync(r.root, link);
    const add = await runCotal(["space", "add", "beta", "--json"], { root: link });
    expect(add.code, add.stderr).toBe(0);
    const st = parseJson<{ root: string }>(await runCotal(["status", "--json"], { root: link }));
    expect(st.root).toBe(r.root);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta"]);
  });

  it("a dangling symlink root, an absurd --expires and an unreadable journal refuse with documented codes, no stack", async () => {
    const tmp = await tempRoot("cotal-edge-");
    try {
      const dangling = join(tmp.path, "gone");
      symlinkSync(join(tmp.path, "nowhere"), dangling);
      const up = await runCotal(["up", "--detach"], { root: dangling });
      expect(up.code, up.stderr).toBe(5);
      expect(up.stderr).toMatch(/\[root-missing\]/);
      expect(up.stderr).not.toMatch(NO_STACK);
    } finally {
      await tmp.cleanup();
    }
    const { r } = await upRoot();
    const creds = await r.cotal(["space", "creds", "alpha", "--expires", "99999999d"]);
    expect(creds.code, creds.stderr).toBe(2);
    expect(creds.stderr).toMatch(/next: /);
    expect(creds.stderr).not.toMatch(NO_STACK);

    mkdirSync(r.layout.journalFile, { recursive: true }); // a journal that cannot be read as a file
    const add = await r.cotal(["space", "add", "beta"]);
    expect(add.code, add.stderr).toBe(3);
    expect(add.stderr).toMatch(/\[corrupt-record\]/);
    expect(add.stderr).not.toMatch(NO_STACK);
    const st = await statusOf(r);
    expect(st.journalError).toMatch(/cannot be read/); // status shows it, never "clean" journal
  });

  it("a failed reap still clears the journal and exits 8 with the paths left behind", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const hold = join(r.root, "..", `hold-reap-${Date.now()}`);
    mkdirSync(hold, { recursive: true });
    const rm = spawnCotal(["space", "rm", "beta", "--yes"], { root: r.root, env: { COTAL_FAILPOINT: `after-commit:barrier:${hold}:2` } });
    let stderr = "";
    rm.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    rm.stdout?.resume();
    const exit = new Promise<number>((res) => rm.on("exit", (c) => res(c ?? -1)));
    await barrierReached(hold, "rm at its commit", 20_000);
    // The account record becomes a non-empty directory: unlinking it fails.
    const acct = r.layout.accountFile("beta");
    renameSync(acct, `${acct}.bak`);
    mkdirSync(join(acct, "pinned"), { recursive: true });
    writeFileSync(join(hold, "test.release"), "");
    expect(await exit, stderr).toBe(8);
    expect(stderr).toMatch(/\[reap-incomplete\]/);
    expect(stderr).toContain(acct);
    expect(existsSync(r.layout.journalFile)).toBe(false);
    const st = await statusOf(r);
    expect(st.inventory?.spaces).toEqual(["alpha"]);
  });

  it("reconcile --adopt-disk on a running broker provisions what it admits; a foreign record refuses before any claim", async () => {
    const { r, up } = await upRoot();
    const broker = loadBrokerTrust(r.layout);
    saveSpaceAccount(r.layout, toAccountRecord(createAccountTrust(broker.operator, "beta", { kind: "space" })));
    const adopt = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"]);
    expect(adopt.code, adopt.stderr).toBe(0);
    const nc = await connectAsAccount(up.url, loadSpaceAccount(r.layout, "beta")!, { name: "test: beta's streams" });
    try {
      const names: string[] = [];
      for await (const n of (await jetstreamManager(nc)).streams.names()) names.push(n);
      expect(names).toContain("cotal_events_beta"); // provisioned like any added space
    } finally {
      await nc.close();
    }
    expect(existsSync(r.layout.sysCredsFile("beta", "observer"))).toBe(true);

    const stranger = createBrokerTrust({ retainSystemSigningSeed: false });
    saveSpaceAccount(r.layout, toAccountRecord(createAccountTrust(stranger.operator, "gamma", { kind: "space" })));
    const foreign = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"]);
    expect(foreign.code, foreign.stderr).toBe(3);
    expect(foreign.stderr).toMatch(/\[(foreign-operator|render-refused)\]/);
    const st = await statusOf(r);
    expect(st.inventory?.pending).toBeNull(); // refused before the claim: nothing to resume
    expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
  });
});
