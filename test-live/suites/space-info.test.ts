import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown } from "@cotal/harness";
import { templateStreamNames } from "@cotal/core/provision";
import { parseJson } from "../fixtures/live-root.js";
import { connectCreds } from "../fixtures/nats.js";
import { runPrinted, refusedWith } from "../fixtures/printed.js";
import { ok, upJson } from "../fixtures/space-data.js";
import { credsText, disposeLiveRoots, trackedRoot } from "../fixtures/tenants.js";

// Issue 31: `space info` is read-only; it shows a space's limits against what the server counts,
// on a running broker, and the limits alone (exit 0) on a stopped one.

interface Row {
  field: string;
  limit: number | null;
  used: number | null;
  percent: number | null;
}
interface InfoDoc {
  space: string;
  state: string;
  publicKey: string;
  limits: Row[];
  usage: { read: boolean; reason?: string };
  creds: { user: string; path: string }[];
  users: { read: boolean; reason?: string; summary?: string; rows?: UserRow[] };
  backups: { reachable: boolean; error?: string };
}
interface UserRow {
  user: string;
  publicKey: string;
  keyShort: string;
  issuedAt: string;
  expiresAt?: string;
  expiry: string;
  admin: boolean;
  permissionsSummary: string;
  state: string;
  revokedAt?: string;
  source: string;
  path: string;
}

afterEach(disposeLiveRoots);
afterAll(async () => {
  await harnessTeardown();
});

const row = (d: InfoDoc, field: string): Row => d.limits.find((r) => r.field === field) as Row;

describe("space info", () => {
  it("limits against usage with a tenant connected; unknown refused with a runnable next; a stopped broker keeps the limits", async () => {
    const r = await trackedRoot("cotal-info-");
    const up = await upJson(r);
    ok(await r.cotal(["space", "add", "beta", "--max-conns", "12", "--max-disk", "8M"]));
    const nc = await connectCreds(up.url, await credsText(r, "beta", "app"));
    try {
      const kv = await new Kvm(nc).open("cotal_state_beta");
      for (let i = 0; i < 10; i++) await kv.put(`k${i}`, new Uint8Array(256).fill(i));
      const d = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"])));
      expect(d).toMatchObject({ space: "beta", state: "active", usage: { read: true } });
      expect(d.publicKey).toMatch(/^A[A-Z2-7]{55}$/);
      expect(row(d, "conns")).toMatchObject({ limit: 12 });
      expect(row(d, "conns").used).toBeGreaterThanOrEqual(1);
      expect(row(d, "disk")).toMatchObject({ limit: 8 * 1024 ** 2 });
      expect(row(d, "disk").used).toBeGreaterThan(0);
      expect(row(d, "streams").used).toBe(templateStreamNames("beta").length);
      expect(d.creds.map((c) => c.user)).toContain("app");
      // Redis down is a line of the document, never a refusal
      const noRedis = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"], { env: { REDIS_URL: "redis://127.0.0.1:1" } })));
      expect(noRedis.backups.reachable).toBe(false);
      const human = ok(await r.cotal(["space", "info", "beta"])).stdout;
      expect(human).toMatch(/^ {2}conns +[1-9]\d* +12 +\d+\.\d%$/m);
      expect(human).toMatch(/^ {2}disk +\S+ \S*B +8 MiB/m);
    } finally {
      await nc.close();
    }

    const refused = await r.cotal(["space", "info", "nosuch"]);
    const next = refusedWith(refused, "space-not-found", 5);
    expect(next).toBe(`cotal --root ${r.root} space list`);
    expect((await runPrinted(next)).code).toBe(0);

    ok(await r.cotal(["down"]));
    const stopped = parseJson<InfoDoc>(ok(await r.cotal(["space", "info", "beta", "--json"])));
    expect(stopped.usage).toEqual({ read: false, reason: "broker not running" });
    expect(row(stopped, "conns")).toMatchObject({ limit: 12, used: null });
    expect(row(stopped, "disk")).toMatchObject({ limit: 8 * 1024 ** 2, used: null });
    expect(ok(await r.cotal(["space", "info", "beta"])).stdout).toContain("usage: broker not running");
  }, 60_000);

  it("the creds ledger in space info: expiry weighed, role, permissions, revoked with when, file; a cred minted before the ledger listed as unknown; no seed", async () => {
    const r = await trackedRoot("cotal-info-");
    await upJson(r, ["--space", "beta"]);
    const mint = async (args: string[]): Promise<{ publicKey: string; path: string }> => parseJson<{ publicKey: string; path: string }>(ok(await r.cotal(["space", "creds", "beta", ...args, "--json"])));
    // a cred from before the ledger: its line taken out of the ledger, its file kept
    const old = await mint(["--user", "old", "--expires", "1h"]);
    const ledger = join(dirname(dirname(old.path)), "creds-ledger.jsonl");
    writeFileSync(ledger, readFileSync(ledger, "utf8").split("\n").filter((l) => !l.includes(old.publicKey)).join("\n"));
    const ci = await mint(["--user", "ci", "--admin"]);
    const gone = await mint(["--user", "gone", "--expires", "30d", "--allow-sub", "orders.>"]);
    ok(await r.cotal(["space", "revoke", "beta", "--user", "gone"]));

    const res = ok(await r.cotal(["space", "info", "beta", "--json"]));
    expect(res.stdout).not.toMatch(/S[OAUNCPX][A-Z2-7]{55}/); // keys, never a seed
    const d = parseJson<InfoDoc>(res);
    expect(d.users.read).toBe(true);
    const row = (key: string) => d.users.rows?.find((u) => u.publicKey === key);
    expect(row(ci.publicKey)).toMatchObject({ user: "ci", admin: true, expiry: "never", state: "active", source: "ledger", path: ci.path, keyShort: `${ci.publicKey.slice(0, 8)}…${ci.publicKey.slice(-8)}` });
    expect(row(ci.publicKey)?.expiresAt).toBeUndefined();
    expect(row(gone.publicKey)).toMatchObject({ user: "gone", admin: false, expiry: "ok", state: "revoked", source: "ledger", permissionsSummary: "user: no stream admin; pub all subjects; sub only orders.>" });
    expect(Date.parse(row(gone.publicKey)?.revokedAt ?? "")).toBeGreaterThan(0);
    expect(row(old.publicKey)).toMatchObject({ user: "old", expiry: "soon", state: "active", source: "unknown (minted before the ledger)", path: old.path });
    expect(d.users.summary).toMatch(/revoked.*\(\d+ minted before the ledger\)$/);

    const human = ok(await r.cotal(["space", "info", "beta"])).stdout;
    expect(human).toMatch(/^ {2}ci +U\S+…\S+ +\S+ +never \(NO EXPIRY\) +admin +active /m);
    expect(human).toMatch(/^ {2}gone +.* user +revoked \(\d{4}-\S+Z\) +user: no stream admin/m);
    expect(human).toMatch(/^ {2}old +.* \(expires soon\) +user +active, unknown \(minted before the ledger\) /m);
  }, 60_000);
});
