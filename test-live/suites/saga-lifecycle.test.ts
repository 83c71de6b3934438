import { existsSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, SurvivorWatcher } from "@cotal/harness";
import type { SpaceAddResult, SpaceListReport, SpaceRmResult } from "@cotal/core";
import { parseJson } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { connectCreds, refusal } from "../fixtures/nats.js";
import { reloadCount } from "../fixtures/broker-log.js";
import { liveServer } from "../fixtures/server-version.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

describe("space add / rm through the saga", () => {
  it("add: the new space's cred connects; rm: it is refused and its live connection closed; siblings reconnect", VERSION_DEPENDENT, async () => {
    const { r, up } = await upRoot();
    const alphaCreds = await credsText(r, "alpha");
    const watcher = await SurvivorWatcher.start({ url: up.url, creds: alphaCreds });

    const add = await r.cotal(["space", "add", "beta", "--json"]);
    expect(add.code, add.stderr).toBe(0);
    const added = parseJson<SpaceAddResult>(add);
    expect(added.outcome).toBe("committed");
    expect(added.added).toEqual(["beta"]);
    expect(added.provisioned.map((p) => p.space)).toEqual(["beta"]);
    const betaCreds = await credsText(r, "beta");
    const betaConn = await connectCreds(up.url, betaCreds);
    expect(await connects(up.url, alphaCreds)).toBe(true);

    let st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
    expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
    expect(st.inventory?.pending).toBeNull();

    const closed = betaConn.closed();
    const rm = await r.cotal(["space", "rm", "beta", "--yes", "--json"]);
    expect(rm.code, rm.stderr).toBe(0);
    const removed = parseJson<SpaceRmResult>(rm);
    expect(removed.outcome).toBe("removed");
    expect(removed.deletedStreams).toContain("cotal_events_beta");
    expect(removed.reaped).toContain(r.layout.accountFile("beta"));
    await closed; // the broker dropped beta's live connection, and reconnect is off for it
    expect(await refusal(up.url, betaCreds)).toMatch(/authorization violation/i);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(false);
    expect(existsSync(r.layout.journalFile)).toBe(false);

    // the sibling survived both reloads: it reconnected by itself (or, 2.14.8+, never dropped) and still works
    if (!liveServer.reloadKeepsJwtClients) await watcher.waitFor("reconnect");
    expect(await connects(up.url, alphaCreds)).toBe(true);
    const events = await watcher.stop();
    const drops = events.filter((e) => e.type === "disconnect").length;
    if (liveServer.reloadKeepsJwtClients) expect(drops).toBe(0);
    else expect(drops).toBeGreaterThanOrEqual(1);
    st = await statusOf(r);
    expect(st.inventory?.spaces).toEqual(["alpha"]);
    expect(st.state).toBe("clean");
  });

  it("is idempotent: adding a present space and removing an absent one are no-op successes", async () => {
    const { r } = await upRoot();
    const before = reloadCount(r.layout);
    const again = await r.cotal(["space", "add", "alpha", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(parseJson<SpaceAddResult>(again).outcome).toBe("noop");
    const rm = await r.cotal(["space", "rm", "nobody", "--yes", "--json"]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(parseJson<SpaceRmResult>(rm).outcome).toBe("absent");
    expect(reloadCount(r.layout)).toBe(before);
    // positive control: a real add does reload
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    expect(reloadCount(r.layout)).toBe(before + 1);
  });

  it("refuses to remove the last tenant, naming the way out", async () => {
    const { r } = await upRoot();
    const rm = await r.cotal(["space", "rm", "alpha", "--yes"]);
    expect(rm.code).toBe(2);
    expect(rm.stderr).toMatch(/last tenant/);
    expect(rm.stderr).toMatch(/next: /);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha"]);
  });

  it("adds 100 spaces in one call with exactly one reload, and every one connects", VERSION_DEPENDENT, async () => {
    const { r, up } = await upRoot();
    const names = Array.from({ length: 100 }, (_, i) => `t${String(i).padStart(3, "0")}`);
    writeFileSync(`${r.root}/../tenants.txt`, `# bulk\n${names.join("\n")}\n`);
    const before = reloadCount(r.layout);
    const add = await r.cotal(["space", "add", "--from", `${r.root}/../tenants.txt`, "--json"], { timeoutMs: 180_000 });
    expect(add.code, add.stderr).toBe(0);
    const res = parseJson<SpaceAddResult>(add);
    expect(res.added.length).toBe(100);
    expect(res.reloads).toBe(1);
    expect(reloadCount(r.layout) - before).toBe(1);
    const list = parseJson<SpaceListReport>(await r.cotal(["space", "list", "--json"]));
    expect(list.spaces.filter((s) => s.state === "active").length).toBe(101);
    for (const n of [names[0], names[57], names[99]] as string[]) expect(await connects(up.url, await credsText(r, n))).toBe(true);
  });

  it("refuses invalid names in a batch before any write", async () => {
    const { r } = await upRoot();
    const before = await statusOf(r);
    const add = await r.cotal(["space", "add", "ok1", "Bad Name"]);
    expect(add.code).toBe(2);
    const after = await statusOf(r);
    expect(after.inventory?.revision).toBe(before.inventory?.revision);
    expect(existsSync(r.layout.accountFile("ok1"))).toBe(false);
  });
});

describe("cold boot and the running-root up", () => {
  it("up → down → up keeps the committed inventory and every space connects", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const gen = (await statusOf(r)).inventory?.generation;
    expect((await r.cotal(["down"])).code).toBe(0);
    const again = await r.cotal(["up", "--detach", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.generation).toBe(gen);
    expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
    expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
  });

  it("a record added by hand with the broker down makes up refuse with both lists and the reconcile exit", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["down"])).code).toBe(0);
    // a valid, correctly signed record for a space the KV never listed
    const { createAccountTrust } = await import("@cotal/core/trust");
    const { loadBrokerTrust, saveSpaceAccount, toAccountRecord } = await import("@cotal/core/root");
    const broker = loadBrokerTrust(r.layout);
    saveSpaceAccount(r.layout, toAccountRecord(createAccountTrust(broker.operator, "sneaky", { kind: "space" })));
    const up = await r.cotal(["up", "--detach"]);
    expect(up.code).toBe(3);
    expect(up.stderr).toMatch(/\[divergence\]/);
    expect(up.stderr).toMatch(/disk-only: \[sneaky\]/);
    expect(up.stderr).toMatch(/next: cotal (--root \S+ )?broker reconcile/);
    expect((await statusOf(r)).broker.running).toBe(false);
  });
});
