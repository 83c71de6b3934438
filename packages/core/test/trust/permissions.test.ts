import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRootTrust } from "../../src/root/create-root.js";
import { loadBrokerTrust } from "../../src/root/broker-store.js";
import { loadSpaceAccount } from "../../src/root/account-store.js";
import { RootLayout } from "../../src/root/layout.js";
import { mintObserverCreds, observerIsCurrent, writeObserverCreds } from "../../src/saga/materialise.js";
import { ensureEvictorCreds, evictAccountConnections, evictorCredsFile } from "../../src/broker/evict-connections.js";
import { mintSpaceCreds } from "../../src/ops/creds.js";
import {
  STREAM_ADMIN_SUBJECTS,
  createAccountTrust,
  createBrokerTrust,
  decodeJwt,
  inboxPrefixOf,
  mintUserCreds,
  observerPermissions,
  parseCreds,
  spaceUserPermissions,
  teardownPermissions,
} from "../../src/trust/index.js";
import { GUARDS_ON } from "../../src/guards.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: true });
const space = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const natsOf = (creds: string) => decodeJwt(parseCreds(creds).jwt).nats as { pub?: { allow?: string[]; deny?: string[] }; sub?: { allow?: string[]; deny?: string[] } };

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function tempRoot(multiSpace = true): RootLayout {
  const dir = mkdtempSync(join(tmpdir(), "cotal-perm-"));
  roots.push(dir);
  const layout = new RootLayout(join(dir, ".cotal"));
  createRootTrust(layout, "alpha", { multiSpace });
  return layout;
}

describe("own inbox prefix", () => {
  it("adds _INBOX_<user key>.> to the subscribe allow list and reports the prefix", () => {
    const u = mintUserCreds(space, { name: "x", allowSub: ["a.>"], ownInbox: true });
    expect(u.inboxPrefix).toBe(`_INBOX_${u.publicKey}`);
    expect(natsOf(u.creds).sub).toEqual({ allow: ["a.>", `_INBOX_${u.publicKey}.>`] });
    expect(inboxPrefixOf(u.creds)).toBe(u.inboxPrefix);
    expect(inboxPrefixOf(mintUserCreds(space, { name: "plain" }).creds)).toBeUndefined();
  });
});

describe("role permissions", () => {
  it("denies a default user every stream create/update/delete/purge, and nothing to an admin", () => {
    const deny = spaceUserPermissions("user").denyPub ?? [];
    for (const s of ["$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>", "$JS.API.STREAM.RESTORE.>"]) {
      expect(deny).toContain(s);
    }
    // reading and consuming stay open
    for (const s of deny) expect(s).not.toMatch(/INFO|NAMES|LIST|MSG\.GET|DIRECT|CONSUMER\.(CREATE|DURABLE|MSG|DELETE)/);
    expect(spaceUserPermissions("admin")).toEqual({});
    expect(spaceUserPermissions("user", { ...GUARDS_ON, UNRESTRICTED_USER: true })).toEqual({});
  });

  it("lets only the teardown user delete streams, and nothing but list/info/delete", () => {
    const t = teardownPermissions();
    expect(t.allowPub).toContain("$JS.API.STREAM.DELETE.*");
    expect(t.allowPub?.every((s) => /^\$JS\.API\.(INFO|STREAM\.(NAMES|LIST|INFO\.\*|DELETE\.\*))$/.test(s))).toBe(true);
    expect(STREAM_ADMIN_SUBJECTS).toContain("$JS.API.STREAM.DELETE.>");
  });

  it("scopes an observer to its own account and, unless switched off, its own inbox", () => {
    const p = observerPermissions(space.publicKey);
    expect(p.ownInbox).toBe(true);
    expect(p.allowSub).toEqual([`$SYS.ACCOUNT.${space.publicKey}.>`]);
    expect(p.allowPub?.every((s) => s.startsWith(`$SYS.REQ.ACCOUNT.${space.publicKey}.`) && !s.includes("CLAIMS"))).toBe(true);
    expect(observerPermissions(space.publicKey, { ...GUARDS_ON, WIDE_OBSERVER_INBOX: true }).allowSub).toContain("_INBOX.>");
  });
});

describe("observer creds on a root", () => {
  it("mints a current observer, re-mints a stale wide one, leaves a current one byte-identical", () => {
    const layout = tempRoot();
    const b = loadBrokerTrust(layout);
    const rec = loadSpaceAccount(layout, "alpha");
    if (!rec) throw new Error("no record");
    const path = layout.sysCredsFile("alpha", "observer");
    writeObserverCreds(layout, b, "alpha");
    const first = readFileSync(path, "utf8");
    expect(observerIsCurrent(first, b.system, rec)).toBe(true);
    expect(natsOf(first).sub?.allow).not.toContain("_INBOX.>");
    writeObserverCreds(layout, b, "alpha");
    expect(readFileSync(path, "utf8")).toBe(first);

    const wide = mintObserverCreds(b.system, rec, { ...GUARDS_ON, WIDE_OBSERVER_INBOX: true }).creds;
    expect(observerIsCurrent(wide, b.system, rec)).toBe(false);
    writeFileSync(path, wide, { mode: 0o600 });
    writeObserverCreds(layout, b, "alpha");
    const healed = readFileSync(path, "utf8");
    expect(healed).not.toBe(wide);
    expect(observerIsCurrent(healed, b.system, rec)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("mints one 0600 evictor per broker, re-minted only when it no longer matches the system account", () => {
    const layout = tempRoot();
    const b = loadBrokerTrust(layout);
    const path = ensureEvictorCreds(layout, b);
    expect(path).toBe(evictorCredsFile(layout));
    const text = readFileSync(path as string, "utf8");
    expect(statSync(path as string).mode & 0o777).toBe(0o600);
    expect(natsOf(text).pub?.allow?.sort()).toEqual(["$SYS.REQ.SERVER.*.CONNZ", "$SYS.REQ.SERVER.*.KICK"]);
    expect(natsOf(text).sub?.allow).toEqual([`${inboxPrefixOf(text)}.>`]);
    ensureEvictorCreds(layout, b);
    expect(readFileSync(path as string, "utf8")).toBe(text);
  });

  it("keeps no evictor on a single-space root (no system signing seed); eviction there is skipped, never thrown", async () => {
    const layout = tempRoot(false);
    expect(ensureEvictorCreds(layout, loadBrokerTrust(layout))).toBeUndefined();
    const res = await evictAccountConnections(layout, "nats://127.0.0.1:1", space.publicKey);
    expect(res.outcome).toBe("skipped");
    expect(res.reason).toMatch(/no system signing seed/);
  });

  it("reports an unreachable broker as a failed eviction instead of throwing (it runs after the point of no return)", async () => {
    const res = await evictAccountConnections(tempRoot(), "nats://127.0.0.1:1", space.publicKey);
    expect(res.outcome).toBe("failed");
    expect(res.reason).toBeTruthy();
  });
});

describe("space creds roles", () => {
  it("mints a default user without stream admin, an --admin with it, under different default names", () => {
    const layout = tempRoot();
    const user = mintSpaceCreds({ root: layout.root, space: "alpha" });
    const admin = mintSpaceCreds({ root: layout.root, space: "alpha", admin: true });
    expect([user.user, user.role, admin.user, admin.role]).toEqual(["user", "user", "admin", "admin"]);
    expect(natsOf(readFileSync(user.path, "utf8")).pub?.deny).toEqual([...STREAM_ADMIN_SUBJECTS]);
    expect(natsOf(readFileSync(admin.path, "utf8")).pub).toBeUndefined();
    const narrow = mintSpaceCreds({ root: layout.root, space: "alpha", user: "n", allowPub: ["orders.>"] });
    expect(natsOf(readFileSync(narrow.path, "utf8")).pub).toEqual({ allow: ["orders.>"], deny: [...STREAM_ADMIN_SUBJECTS] });
  });
});
