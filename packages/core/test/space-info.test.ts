import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RootLayout, CotalError, EXPIRING_SOON_MS, credExpiry, limitsQuota, percentOf, permissionsSummary, quotaLimits, shortKey, spaceCredsFiles, spaceEntry, spaceInfoFrom, spaceInfoUsers, usageRows, type AccountRecord, type SpaceQuota, type SpaceUsage, type StatusReport } from "../src/internal.js";
import { mintSpaceCreds } from "../src/ops/creds.js";
import { loadSpaceAccount } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { runMutation } from "../src/saga/mutation.js";
import { decodeJwt, mintUserCreds } from "../src/trust/index.js";
import { resignUserRevocations } from "../src/trust/user-revocations.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { GUARDS_ON } from "../src/guards.js";
import { add } from "./saga-memory-helpers.js";

const QUOTA: SpaceQuota = { disk: 8 * 1024 ** 2, mem: 4 * 1024 ** 2, streams: 16, consumers: -1, conns: 10, subs: 10_000, payload: 1024 ** 2, leafnodes: 0 };
const USAGE: SpaceUsage = { disk: 2 * 1024 ** 2, mem: 0, streams: 3, consumers: 7, conns: 1, subs: 4 };

/** A running broker serving alpha (on disk, in the KV and the config). */
function report(running = true): StatusReport {
  return {
    root: "/r",
    exists: true,
    state: running ? "clean" : "stopped",
    why: "",
    broker: { running, staleRuntime: false, strays: [], ...(running ? { url: "nats://127.0.0.1:4222" } : {}) },
    spaces: [{ name: "alpha", publicKey: "AALPHA", createdAt: "2026-01-01T00:00:00.000Z", inConfig: true, inInventory: running }],
    corrupt: [],
    inventory: running ? ({ spaces: ["alpha"], generation: 2, revision: 5 } as unknown as StatusReport["inventory"]) : null,
    diskOnly: [],
    kvOnly: [],
    configOnly: [],
    journal: null,
    provisioningOwed: [],
    lock: null,
    quiesced: [],
  };
}

const REC = { name: "alpha", publicKey: "AALPHA", createdAt: "2026-01-01T00:00:00.000Z", limits: quotaLimits(QUOTA) } as unknown as AccountRecord;

describe("space info: usage against limits (pure)", () => {
  it("percent is used/limit to one decimal; unlimited (-1), zero and unknown give none", () => {
    expect(percentOf(3, 16)).toBe(18.8);
    expect(percentOf(0, 10)).toBe(0);
    expect(percentOf(5, -1)).toBeNull();
    expect(percentOf(5, 0)).toBeNull();
    expect(percentOf(null, 10)).toBeNull();
    expect(percentOf(3, null)).toBeNull();
  });

  it("one row per quota field; payload and leafnodes are limits only; the signed limits round-trip", () => {
    expect(limitsQuota(quotaLimits(QUOTA))).toEqual(QUOTA);
    const rows = usageRows(QUOTA, USAGE);
    expect(rows.map((r) => r.field)).toEqual(["disk", "mem", "streams", "consumers", "conns", "subs", "payload", "leafnodes"]);
    expect(rows.find((r) => r.field === "disk")).toEqual({ field: "disk", limit: QUOTA.disk, used: USAGE.disk, percent: 25 });
    expect(rows.find((r) => r.field === "consumers")).toEqual({ field: "consumers", limit: -1, used: 7, percent: null });
    expect(rows.find((r) => r.field === "payload")).toEqual({ field: "payload", limit: QUOTA.payload, used: null, percent: null });
  });

  it("no usage read: limits stand alone; no record: nothing stands", () => {
    expect(usageRows(QUOTA, null).every((r) => r.used === null && r.percent === null && r.limit !== null)).toBe(true);
    expect(usageRows(null, USAGE).every((r) => r.limit === null && r.percent === null)).toBe(true);
    expect(usageRows(QUOTA, { ...USAGE, subs: null }).find((r) => r.field === "subs")?.used).toBeNull();
  });
});

describe("space info: the document (pure)", () => {
  it("a running broker: state from the space list, usage read", () => {
    const d = spaceInfoFrom(report(), spaceEntry(report(), "alpha"), REC, USAGE, [], new Date(0));
    expect(d).toMatchObject({ space: "alpha", state: "active", rootState: "clean", publicKey: "AALPHA", broker: { running: true, url: "nats://127.0.0.1:4222" }, usage: { read: true, readAt: new Date(0).toISOString() } });
    expect(d.limits.find((r) => r.field === "conns")).toEqual({ field: "conns", limit: 10, used: 1, percent: 10 });
  });

  it("a stopped broker: the record's limits, usage says why it is absent", () => {
    const d = spaceInfoFrom(report(false), spaceEntry(report(false), "alpha"), REC, "broker not running", []);
    expect(d.usage).toEqual({ read: false, reason: "broker not running" });
    expect(d.broker).toEqual({ running: false, url: null });
    expect(d.limits.find((r) => r.field === "disk")).toMatchObject({ limit: QUOTA.disk, used: null });
  });

  it("an unknown space is space-not-found with `cotal space list` next", () => {
    let caught: unknown;
    try {
      spaceEntry(report(), "nosuch");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CotalError);
    expect(caught).toMatchObject({ code: "space-not-found", next: "cotal space list" });
  });
});

describe("space info: creds files under the root", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("lists users/*.creds sorted, then the $SYS observer; none when nothing was minted", () => {
    const root = mkdtempSync(join(tmpdir(), "cotal-info-"));
    dirs.push(root);
    const layout = new RootLayout(root);
    expect(spaceCredsFiles(layout, "alpha")).toEqual([]);
    mkdirSync(join(layout.spaceDir("alpha"), "users"), { recursive: true });
    for (const u of ["zed", "app"]) writeFileSync(layout.userCredsFile("alpha", u), "x");
    writeFileSync(join(layout.spaceDir("alpha"), "users", "notes.txt"), "not a creds file");
    writeFileSync(layout.sysCredsFile("alpha", "observer"), "x");
    expect(spaceCredsFiles(layout, "alpha")).toEqual([
      { user: "app", path: layout.userCredsFile("alpha", "app"), kind: "user" },
      { user: "zed", path: layout.userCredsFile("alpha", "zed"), kind: "user" },
      { user: "sys.observer", path: layout.sysCredsFile("alpha", "observer"), kind: "sys-observer" },
    ]);
  });
});

describe("space info: the creds ledger (issue 33, `space users` on the info page)", () => {
  let m: MemorySaga | undefined;
  afterEach(() => m?.close());
  const HOUR = 3600;

  it("each cred with its expiry weighed, role, permissions, revoked with when, its file; unknown ones listed; never a seed", async () => {
    m = memorySaga();
    await runMutation(m.env, add("beta"));
    const root = m.root.layout.root;
    const alice = mintSpaceCreds({ root, space: "beta", user: "alice" }); // no expiry
    const bob = mintSpaceCreds({ root, space: "beta", user: "bob", admin: true, expiresInSeconds: HOUR });
    const carol = mintSpaceCreds({ root, space: "beta", user: "carol", expiresInSeconds: 30 * 24 * HOUR, allowPub: ["orders.>"], allowSub: ["orders.>", "audit.*"] });
    const erin = mintSpaceCreds({ root, space: "beta", user: "erin", expiresInSeconds: 3 * 24 * HOUR });
    const dave = mintSpaceCreds({ root, space: "beta", user: "dave", expiresInSeconds: 90 * 24 * HOUR });
    const rec = loadSpaceAccount(m.root.layout, "beta") as AccountRecord;
    const legacy = mintUserCreds(rec, { name: "beta/legacy" }); // written before the ledger: only its file
    writeFileSync(m.root.layout.userCredsFile("beta", "legacy"), legacy.creds, { mode: 0o600 });
    const revokedAt = decodeJwt(legacy.jwt).iat + 5;
    const to = resignUserRevocations(loadBrokerTrust(m.root.layout).operator, rec.jwt, { [dave.publicKey]: revokedAt }).jwt;
    await runMutation(m.env, { op: "revoke", verb: "space revoke", revokeChange: { space: "beta", from: rec.jwt, to } });

    const u = spaceInfoUsers(root, "beta", GUARDS_ON, Date.now() + 2 * HOUR * 1000); // bob's hour is over
    if (!u.read) throw new Error(u.reason);
    const row = (name: string) => u.rows.find((r) => r.user === name);
    expect(u.rows.map((r) => [r.user, r.publicKey, r.state, r.expiry, r.admin, r.source === "ledger"])).toEqual([
      ["alice", alice.publicKey, "active", "never", false, true],
      ["bob", bob.publicKey, "expired", "expired", true, true],
      ["carol", carol.publicKey, "active", "ok", false, true],
      ["erin", erin.publicKey, "active", "soon", false, true],
      ["dave", dave.publicKey, "revoked", "ok", false, true],
      ["legacy", legacy.publicKey, "active", "never", true, false], // minted with no deny list: the full API, so admin
    ]);
    expect(row("dave")?.revokedAt).toBe(new Date(revokedAt * 1000).toISOString());
    expect(row("alice")?.revokedAt).toBeUndefined();
    expect(row("legacy")?.source).toBe("unknown (minted before the ledger)");
    expect(row("carol")?.path).toBe(carol.path);
    expect(row("carol")?.keyShort).toBe(`${carol.publicKey.slice(0, 8)}…${carol.publicKey.slice(-8)}`);
    expect(row("carol")?.permissionsSummary).toBe("user: no stream admin; pub only orders.>; sub only orders.>, audit.*");
    expect(row("bob")?.permissionsSummary).toBe("admin: full JetStream API; pub all subjects; sub all subjects");
    expect(u.summary).toBe("6 cred(s): 4 active, 1 revoked, 1 expired (1 minted before the ledger)");
    // never a seed: not the minted ones, not any nkeys seed at all
    const text = JSON.stringify(u);
    expect(text).not.toContain(legacy.seed);
    expect(text).not.toMatch(/S[OAUNCPX][A-Z2-7]{55}/);
  });

  it("a space with no record on disk reads why, not a failure", async () => {
    m = memorySaga();
    await runMutation(m.env, add("beta"));
    expect(spaceInfoUsers(m.root.layout.root, "gamma")).toEqual({ read: false, reason: "no account record on disk (kv-only)" });
    const empty = spaceInfoUsers(m.root.layout.root, "beta");
    expect(empty).toMatchObject({ read: true, rows: [], unreadable: 0 });
  });

  it("expiry: never, expired at the instant, soon within seven days, ok beyond (pure)", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    expect(credExpiry(undefined, now)).toBe("never");
    expect(credExpiry("2030-01-01T00:00:00Z", now)).toBe("expired");
    expect(credExpiry(new Date(now + EXPIRING_SOON_MS).toISOString(), now)).toBe("soon");
    expect(credExpiry(new Date(now + EXPIRING_SOON_MS + 1000).toISOString(), now)).toBe("ok");
  });

  it("permissions in a line: long lists cut, other denies named (pure)", () => {
    expect(permissionsSummary({ admin: false, permissions: { pub: { allow: ["a", "b", "c", "d", "e"], deny: ["$JS.API.STREAM.CREATE.>", "x.>"] }, sub: { deny: ["y"] } } })).toBe("user: no stream admin; pub only a, b, c and 2 more; sub all subjects; pub denied x.>; sub denied y");
    expect(permissionsSummary({ admin: false, permissions: {} })).toBe("user; pub all subjects; sub all subjects");
    expect(shortKey("UABC")).toBe("UABC");
  });
});
