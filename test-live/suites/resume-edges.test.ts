import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import { connectAsAccount } from "@cotal/core/broker";
import { AuthorityStore, type InventoryRecord } from "@cotal/core/inventory";
import { loadAuthorityAccount, loadSpaceAccount } from "@cotal/core/root";
import { jetstreamManager } from "@nats-io/jetstream";
import type { LiveRoot } from "../fixtures/live-root.js";
import { connects, credsText, disposeLiveRoots, FAILPOINT_EXIT, statusOf, upRoot } from "../fixtures/tenants.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Edges of the crash-resume table (docs/resume.md) driven end to end on a real broker: each cell
// reaches a torn record the way a crash or a lost write would, then follows only the printed exits.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

/** Overwrites the inventory record as a store that lost its last writes would present it. */
async function forgeRecord(url: string, r: LiveRoot, edit: (rec: InventoryRecord) => InventoryRecord): Promise<void> {
  const store = await AuthorityStore.connect(url, loadAuthorityAccount(r.layout), { name: "test forge" });
  try {
    const cur = await store.read();
    if (!cur) throw new Error("no record to forge");
    await store.update(edit(cur.record), cur.revision);
  } finally {
    await store.close();
  }
}

function nextOf(stderr: string): string[] {
  const line = stderr.split("\n").find((l) => l.includes("next: ")) ?? "";
  const argv = (line.slice(line.indexOf("next: ") + 6).split("#")[0] ?? "").trim().split(/\s+/);
  expect(argv[0], stderr).toBe("cotal");
  return argv.slice(1);
}

describe("crash-resume edges", () => {
  it("a KV that lost its last writes (claim never staged, server.conf serves beta): refuse, delete nothing, reconcile restores beta", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const beta = await credsText(r, "beta");
    // The store forgot beta's staging, proof and commit: it still holds only the claim.
    await forgeRecord(up.url, r, (rec) => ({
      ...rec,
      generation: rec.generation - 1,
      appliedGeneration: rec.generation - 1,
      spaces: rec.spaces.filter((s) => s !== "beta"),
      configDigest: `sha256:${"0".repeat(64)}`,
      pending: { generation: rec.generation, op: "add", adds: ["beta"], removes: [], writer: "pid 1@lost (space add)", leaseId: "lost", claimedAt: new Date().toISOString(), mints: ["beta"] },
    }));
    expect((await r.cotal(["down"])).code).toBe(0);
    const boot = await r.cotal(["up", "--detach"]);
    expect(boot.code, boot.stderr).toBe(3);
    expect(boot.stderr).toMatch(/\[resume-refused\]/);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(true); // its key survives the refusal
    const reconcile = await r.cotal([...nextOf(boot.stderr), "--adopt-disk", "--yes"]);
    expect(reconcile.code, reconcile.stderr).toBe(0);
    expect((await r.cotal(["up", "--detach"])).code).toBe(0);
    expect(await connects(up.url, beta)).toBe(true);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
  });

  it("nothing pending, yet appliedGeneration ≠ generation: the live saga refuses instead of working over it", async () => {
    const { r, up } = await upRoot();
    await forgeRecord(up.url, r, (rec) => ({ ...rec, appliedGeneration: rec.generation - 1 }));
    const add = await r.cotal(["space", "add", "beta"]);
    expect(add.code, add.stderr).toBe(3);
    expect(add.stderr).toMatch(/\[resume-refused\]/);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(false);
    expect((await statusOf(r)).state).toBe("UNPROVEN RELOAD");
    const fix = await r.cotal([...nextOf(add.stderr), "--adopt-kv", "--yes"]);
    expect(fix.code, fix.stderr).toBe(0);
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    expect((await statusOf(r)).state).toBe("clean");
  });

  it("a promoted config the broker rejects does not wedge the root: the resume rolls back to the committed bytes", VERSION_DEPENDENT, async () => {
    const { r, up } = await upRoot();
    const alpha = await credsText(r, "alpha");
    const settings = readFileSync(r.layout.settingsFile, "utf8");
    const s = JSON.parse(settings) as { port: number };
    writeFileSync(r.layout.settingsFile, JSON.stringify({ ...s, port: s.port + 1 })); // a listen port cannot change on reload
    const add = await r.cotal(["space", "add", "beta"], { env: { COTAL_FAILPOINT: "after-rename:exit" } });
    expect(add.code, add.stderr).toBe(FAILPOINT_EXIT);
    writeFileSync(r.layout.settingsFile, settings);
    expect((await statusOf(r)).state).toBe("PROMOTED-BUT-UNCOMMITTED");
    const resume = await r.cotal(["up", "--detach"]);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stderr + resume.stdout).toMatch(/rejected the promoted config|rolled/i);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha"]);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(false); // minted by the rolled-back claim
    expect(await connects(up.url, alpha)).toBe(true);
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
  });

  it("cold boot after a crashed add compares the disk list after its rollback: no false divergence", async () => {
    const { r, up } = await upRoot();
    const add = await r.cotal(["space", "add", "beta"], { env: { COTAL_FAILPOINT: "after-materialise:exit" } });
    expect(add.code, add.stderr).toBe(FAILPOINT_EXIT);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(true);
    expect((await r.cotal(["down"])).code).toBe(0);
    const boot = await r.cotal(["up", "--detach"]);
    expect(boot.code, boot.stderr).toBe(0);
    expect(existsSync(r.layout.accountFile("beta"))).toBe(false);
    const st = await statusOf(r);
    expect(st.state).toBe("clean");
    expect(st.inventory?.spaces).toEqual(["alpha"]);
    expect(await connects(up.url, await credsText(r, "alpha"))).toBe(true);
  });

  it("a batch add killed after its commit: up re-checks provisioning, so the committed spaces get their streams and $SYS creds", async () => {
    const { r, up } = await upRoot();
    const add = await r.cotal(["space", "add", "b1", "b2"], { env: { COTAL_FAILPOINT: "after-commit:kill" } });
    expect(add.code).not.toBe(0);
    expect(existsSync(r.layout.sysCredsFile("b1", "observer"))).toBe(false); // committed, never provisioned
    expect((await statusOf(r)).provisioningOwed).toEqual(["b1", "b2"]); // durable: status sees what is owed
    const shown = await r.cotal(["status"]);
    const next = (shown.stdout.split("\n").find((l) => l.includes("next: ")) ?? "").split("next: ")[1]?.split("#")[0]?.trim().split(/\s+/) ?? [];
    expect(next.slice(0, 4)).toEqual(["cotal", "--root", r.root, "up"]);
    const fix = await r.cotal(next.slice(1));
    expect(fix.code, fix.stderr).toBe(0);
    for (const s of ["b1", "b2"]) {
      expect(existsSync(r.layout.sysCredsFile(s, "observer"))).toBe(true);
      const nc = await connectAsAccount(up.url, loadSpaceAccount(r.layout, s) as NonNullable<ReturnType<typeof loadSpaceAccount>>, { name: "test: provisioned?" });
      try {
        const names: string[] = [];
        for await (const n of (await jetstreamManager(nc)).streams.names()) names.push(n);
        expect(names).toContain(`cotal_events_${s}`);
      } finally {
        await nc.close();
      }
    }
    expect((await statusOf(r)).provisioningOwed).toEqual([]);
  });
});
