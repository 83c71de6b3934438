import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, spawnCotal } from "@cotal/harness";
import { type ReconcileReport, type UpResult } from "@cotal/core";
import { loadBrokerTrust, saveSpaceAccount, toAccountRecord } from "@cotal/core/root";
import { createAccountTrust, decodeJwt, parseCreds } from "@cotal/core/trust";
import { parseJson, snapshotTree, type LiveRoot } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, upRoot } from "../fixtures/tenants.js";
import { connectCreds, refusal } from "../fixtures/nats.js";
import { cell } from "../fixtures/matrix.js";

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

function handAddRecord(r: LiveRoot, name: string): void {
  const broker = loadBrokerTrust(r.layout);
  saveSpaceAccount(r.layout, toAccountRecord(createAccountTrust(broker.operator, name, { kind: "space" })));
}

describe("cotal broker reconcile (docs/refusals.md)", () => {
  it("the cold-boot wedge: up refuses, bare reconcile prints both lists and refuses, --adopt-disk --yes converges", () =>
    cell("cold-boot wedge (reconcile)", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    expect((await r.cotal(["down"])).code).toBe(0);
    handAddRecord(r, "sneaky");

    const refused = await r.cotal(["up", "--detach"]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/next: cotal (--root \S+ )?broker reconcile/);

    const before = snapshotTree(r.root);
    const bare = await r.cotal(["broker", "reconcile", "--json"]);
    expect(bare.code).toBe(3);
    const doc = parseJson<{ report: ReconcileReport; error: { code: string; message: string } }>(bare);
    expect(doc.error.code).toBe("direction-required");
    expect(doc.report.disk.spaces).toEqual(["alpha", "beta", "sneaky"]);
    expect(doc.report.kv?.spaces).toEqual(["alpha", "beta"]);
    expect(doc.report.diskOnly).toEqual(["sneaky"]);
    expect(doc.report.kvOnly).toEqual([]);
    expect(doc.report.state).toBe("divergence");
    expect(doc.error.message).toMatch(/--adopt-disk.*admits sneaky/);
    expect(doc.error.message).toMatch(/--adopt-kv.*EVICTS 1 space \(sneaky\)/);
    // the human form prints the same picture
    const human = await r.cotal(["broker", "reconcile"]);
    expect(human.stdout).toMatch(/disk \(3\): alpha, beta, sneaky/);
    expect(human.stdout).toMatch(/kv {3}\(2\): alpha, beta/);
    expect(human.stdout).toMatch(/disk-only: \[sneaky\]/);
    // without --yes (and no TTY) it prints the blast radius and refuses
    const unconfirmed = await r.cotal(["broker", "reconcile", "--adopt-disk"]);
    expect(unconfirmed.code).toBe(3);
    expect(unconfirmed.stdout).toMatch(/--adopt-disk will ADMIT 1 space from disk: sneaky/);
    expect(unconfirmed.stderr).toMatch(/next: cotal (--root \S+ )?broker reconcile --adopt-disk --yes/);
    // none of the refusals changed a record (the maintenance broker's log and run files aside)
    const same = (t: Record<string, string>) => Object.fromEntries(Object.entries(t).filter(([k]) => k.startsWith("auth/") || k === "server.conf"));
    expect(same(snapshotTree(r.root))).toEqual(same(before));

    const fix = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"]);
    expect(fix.code, fix.stderr).toBe(0);
    expect(fix.stdout).toMatch(/next: cotal (--root \S+ )?up --detach/);
    const again = await r.cotal(["up", "--detach"]);
    expect(again.code, again.stderr).toBe(0);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "beta", "sneaky"]);
    for (const s of ["alpha", "beta", "sneaky"]) expect(await connects(up.url, await credsText(r, s))).toBe(true);
    }));

  it("--adopt-kv evicts exactly the printed disk-only spaces, keeps their records, and their creds stop connecting", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const betaCreds = await credsText(r, "beta");
    // a live divergence: a record on disk the broker's list never had (hand-added, or from a restored old auth/)
    handAddRecord(r, "ghost");
    const ghostCreds = await credsText(r, "ghost");
    expect(await connects(up.url, betaCreds)).toBe(true); // positive control: beta works before
    const bare = parseJson<{ report: ReconcileReport }>(await r.cotal(["broker", "reconcile", "--json"]));
    expect(bare.report.diskOnly).toEqual(["ghost"]);
    const res = await r.cotal(["broker", "reconcile", "--adopt-kv", "--yes", "--json"]);
    expect(res.code, res.stderr).toBe(0);
    const out = parseJson<{ report: ReconcileReport; outcome: string }>(res);
    expect(out.outcome).toBe("reconciled");
    expect(out.report.plan?.evicts.map((e) => e.name)).toEqual(["ghost"]);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
    expect(st.inventory?.excluded).toEqual(["ghost"]);
    expect(await refusal(up.url, ghostCreds)).toMatch(/authorization violation/i);
    expect(await connects(up.url, betaCreds)).toBe(true);
    // the record was not deleted, and a cold boot no longer calls it a divergence
    expect(readFileSync(r.layout.accountFile("ghost"), "utf8")).toContain('"ghost"');
    expect((await r.cotal(["down"])).code).toBe(0);
    const again = await r.cotal(["up", "--detach"]);
    expect(again.code, again.stderr).toBe(0);
    // re-admitting it is a plain add that reuses the record
    expect((await r.cotal(["space", "add", "ghost"])).code).toBe(0);
    expect(await connects(up.url, ghostCreds)).toBe(true);
    expect((await statusOf(r)).inventory?.excluded ?? []).toEqual([]);
  });

  it("a record that moved between print and claim makes it refuse and print the new state", async () => {
    const { r } = await upRoot();
    handAddRecord(r, "late");
    const child = spawnCotal(["broker", "reconcile", "--adopt-disk", "--yes"], { root: r.root, env: { COTAL_FAILPOINT: "after-read:sleep:3000" } });
    let out = "";
    let errText = "";
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (errText += d.toString()));
    const exited = new Promise<number | null>((res) => child.on("exit", (c) => res(c)));
    const deadline = Date.now() + 15_000;
    while (!out.includes("will ADMIT") && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    await new Promise((res) => setTimeout(res, 300)); // it has read the record and sleeps at after-read
    // Another host's writer moves the record: the per-host lock is advisory, so step around it and put it back.
    const lockBytes = readFileSync(r.layout.lockFile);
    rmSync(r.layout.lockFile);
    const add = await r.cotal(["space", "add", "gamma"]);
    writeFileSync(r.layout.lockFile, lockBytes, { mode: 0o600 });
    expect(add.code, add.stderr).toBe(0);
    expect(await exited).toBe(4);
    expect(errText).toMatch(/\[conflict\]/);
    expect(errText).toMatch(/moved since it was printed/);
    expect(out.match(/^disk \(/gm)?.length).toBe(2); // printed again
    expect(out).toMatch(/kv {3}\(2\): alpha, gamma/);
    const st = await statusOf(r);
    expect(st.inventory?.spaces).toEqual(["alpha", "gamma"]); // nothing of the stale decision landed
    expect(st.inventory?.pending).toBeNull();
  });

  it("a corrupt record makes reconcile refuse before offering any resolution", async () => {
    const { r } = await upRoot();
    writeFileSync(r.layout.accountFile("broken"), "{", { mode: 0o600 });
    for (const args of [["broker", "reconcile"], ["broker", "reconcile", "--adopt-disk", "--yes"]]) {
      const res = await r.cotal(args);
      expect(res.code).toBe(3);
      expect(res.stderr).toMatch(/\[corrupt-record\]/);
      expect(res.stderr).toContain(r.layout.accountFile("broken"));
      expect(res.stdout).not.toMatch(/will (EVICT|ADMIT)/);
    }
  });

  it("a crash inside reconcile resumes exactly like a crash inside add", async () => {
    const { r, up } = await upRoot();
    handAddRecord(r, "late");
    const crashed = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"], { env: { COTAL_FAILPOINT: "after-rename:exit" } });
    expect(crashed.code).toBe(FAILPOINT_EXIT);
    expect((await statusOf(r)).state).toBe("PROMOTED-BUT-UNCOMMITTED");
    const resumed = await r.cotal(["up", "--detach", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseJson<UpResult>(resumed).notes.join("\n")).toMatch(/complete-forward/);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "late"]);
    expect(await connects(up.url, await credsText(r, "late"))).toBe(true);
  });
});

describe("cotal up --rotate-sys", () => {
  it("lets a --single-space root add spaces, and every tenant's $SYS creds verify against the new system account", async () => {
    const { r, up } = await upRoot(["--single-space"]);
    const refused = await r.cotal(["space", "add", "beta"]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/\[system-seed-absent\]/);
    expect(refused.stderr).toMatch(/next: cotal (--root \S+ )?down && cotal (--root \S+ )?up --rotate-sys/);

    const live = await r.cotal(["up", "--rotate-sys", "--detach"]);
    expect(live.code).toBe(6); // the broker is running: rotation is offline
    expect(live.stderr).toMatch(/\[broker-running\]/);

    const oldSys = loadBrokerTrust(r.layout).system.publicKey;
    expect((await r.cotal(["down"])).code).toBe(0);
    const rot = await r.cotal(["up", "--rotate-sys", "--detach"]);
    expect(rot.code, rot.stderr).toBe(0);
    expect(rot.stdout).toMatch(/full backups taken against the retired system-account chain no longer restore/);
    const broker = loadBrokerTrust(r.layout);
    expect(broker.system.publicKey).not.toBe(oldSys);
    expect(broker.generation).toBe(2);
    expect(broker.system.signingSeed).toBeDefined();

    const add = await r.cotal(["space", "add", "beta"]);
    expect(add.code, add.stderr).toBe(0);
    for (const s of ["alpha", "beta"]) {
      const creds = readFileSync(r.layout.sysCredsFile(s, "observer"), "utf8");
      const claims = decodeJwt(parseCreds(creds).jwt);
      expect(claims.nats.issuer_account).toBe(broker.system.publicKey);
      const nc = await connectCreds(up.url, creds);
      await nc.close();
    }
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta"]);
  });
});
