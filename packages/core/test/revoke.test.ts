/**
 * Issue 33, "Revoke a user" and "Know every cred": the revocation re-sign, its plan (which keys, a
 * second revoke a no-op, the prune), the saga op "revoke" and its crash-resume rows (like a limits
 * re-sign: rolled back to the old JWT before promotion, completed forward after), and the creds ledger.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { mintSpaceCreds } from "../src/ops/creds.js";
import { planRevocation, pruneExpiredRevocations } from "../src/ops/space-revoke.js";
import { userConnections } from "../src/broker/evict-users.js";
import { spaceUsers, usersSummary, type SpaceUserRow } from "../src/ops/space-users.js";
import { parseInventoryRecord, type InventoryRecord } from "../src/inventory/record.js";
import { loadSpaceAccount } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { credsLedgerFile, parseLedger } from "../src/root/creds-ledger.js";
import type { AccountRecord } from "../src/root/records.js";
import { decisionRead, runMutation, type MutationIntent } from "../src/saga/mutation.js";
import { createKeyPair, decodeJwt, mintUserCreds } from "../src/trust/index.js";
import { resignAccountRevocations } from "../src/trust/account.js";
import { isRevoked, resignUserRevocations, revocationsToAdd, userRevocations } from "../src/trust/user-revocations.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { GUARDS_ON } from "../src/guards.js";
import { add, confText, crashAt, expectCode, expectConverged, record, resumeOnly } from "./saga-memory-helpers.js";

let s: MemorySaga;
afterEach(() => s?.close());

const account = (m: MemorySaga, space: string) => loadSpaceAccount(m.root.layout, space) as AccountRecord;
const operator = (m: MemorySaga) => loadBrokerTrust(m.root.layout).operator;
const revoke = (space: string, from: string, to: string): MutationIntent => ({ op: "revoke", verb: "space revoke", revokeChange: { space, from, to } });

async function withBeta(): Promise<MemorySaga> {
  const m = memorySaga();
  await runMutation(m.env, add("beta"));
  return m;
}

describe("the revocation re-sign (trust/user-revocations.ts)", () => {
  it("adds a user key's entry, keeps the quiesce's \"*\" and every other claim, and prunes only what it is told", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const alice = createKeyPair("user").publicKey;
    const old = createKeyPair("user").publicKey;
    const withStar = resignAccountRevocations(operator(s), rec.jwt, 100).jwt;
    const first = resignUserRevocations(operator(s), withStar, { [old]: 50 }).jwt;
    const second = resignUserRevocations(operator(s), first, { [alice]: 200 }, [old]).jwt;
    const claims = decodeJwt(second);
    expect(claims.nats.revocations).toEqual({ "*": 100, [alice]: 200 });
    expect(claims.sub).toBe(rec.publicKey);
    expect(claims.nats.limits).toEqual(decodeJwt(rec.jwt).nats.limits);
    expect(userRevocations(second)).toEqual({ [alice]: 200 });
    expect(() => resignUserRevocations(operator(s), rec.jwt, { [rec.publicKey]: 1 })).toThrow(/not a user public key/);
    expect(() => resignUserRevocations(operator(s), rec.jwt, { [alice]: 1.5 })).toThrow(/whole unix seconds/);
  });

  it("applies the server's rule: revoked when issued at or before the time", () => {
    expect(isRevoked({ U1: 100 }, "U1", 100)).toBe(true);
    expect(isRevoked({ U1: 100 }, "U1", 101)).toBe(false);
    expect(isRevoked({ U1: 100 }, "U2", 1)).toBe(false);
    expect(revocationsToAdd({ U1: 100 }, ["U1", "U2"], 90)).toEqual({ U2: 90 });
    expect(revocationsToAdd({ U1: 100 }, ["U1"], 150)).toEqual({ U1: 150 });
  });
});

function row(user: string, iat: number, extra: Partial<SpaceUserRow> = {}): SpaceUserRow {
  const publicKey = createKeyPair("user").publicKey;
  return { user, publicKey, iat, issuedAt: new Date(iat * 1000).toISOString(), admin: false, permissions: {}, path: `/r/${user}.creds`, state: "active", source: "ledger", onDisk: true, ...extra };
}

describe("planRevocation", () => {
  const now = 2_000_000_000_000;
  const a1 = row("alice", 1000);
  const a2 = row("alice", 3000);
  const bob = row("bob", 1000);
  const rows = [a1, a2, bob];

  it("--user revokes every cred of the name issued at or before --before; the newer one is kept", () => {
    expect(planRevocation("beta", rows, {}, { user: "alice" }, 5000, now).entries).toEqual({ [a1.publicKey]: 5000, [a2.publicKey]: 5000 });
    const p = planRevocation("beta", rows, {}, { user: "alice" }, 2000, now);
    expect(p.entries).toEqual({ [a1.publicKey]: 2000 });
    expect(p.creds.map((c) => c.publicKey)).toEqual([a1.publicKey]);
  });

  it("--key revokes that one cred; revoking twice writes nothing (a no-op)", () => {
    expect(planRevocation("beta", rows, {}, { key: bob.publicKey }, 5000, now).entries).toEqual({ [bob.publicKey]: 5000 });
    expect(planRevocation("beta", rows, { [bob.publicKey]: 4000 }, { key: bob.publicKey }, 6000, now).entries).toEqual({});
  });

  it("an unknown user or key refuses user-not-found; --force takes an unknown key", () => {
    expect(() => planRevocation("beta", rows, {}, { user: "mallory" }, 5000, now)).toThrow(expect.objectContaining({ code: "user-not-found", next: "cotal space users beta" }));
    const stranger = createKeyPair("user").publicKey;
    expect(() => planRevocation("beta", rows, {}, { key: stranger }, 5000, now)).toThrow(expect.objectContaining({ code: "user-not-found" }));
    expect(planRevocation("beta", rows, {}, { key: stranger, force: true }, 5000, now).entries).toEqual({ [stranger]: 5000 });
  });

  it("refuses a --before earlier than every cred of the user (it would revoke nothing)", () => {
    expect(() => planRevocation("beta", rows, {}, { user: "alice" }, 10, now)).toThrow(expect.objectContaining({ code: "invalid-argument" }));
  });

  it("prunes an entry whose creds have all expired, keeps one of a cred that never expires or is unknown", () => {
    const gone = row("carol", 100, { expiresAt: new Date(now - 1).toISOString() });
    const forever = row("dave", 100);
    const current = { [gone.publicKey]: 150, [forever.publicKey]: 150, UNKNOWNKEY: 150 };
    const p = planRevocation("beta", [...rows, gone, forever], current, { key: bob.publicKey }, 5000, now);
    expect(p.prune).toEqual([gone.publicKey]);
  });
});

describe("op revoke through the saga (in memory)", () => {
  it("claims, renders the re-signed JWT, proves and commits; the record carries the revocation", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const key = createKeyPair("user").publicKey;
    const to = resignUserRevocations(operator(s), rec.jwt, { [key]: 1234 }).jwt;
    const r = await runMutation(s.env, revoke("beta", rec.jwt, to));
    expect(r).toMatchObject({ outcome: "committed", generation: 3, reloads: 1 });
    expect(confText(s)).toContain(to);
    expect(userRevocations(account(s, "beta").jwt)).toEqual({ [key]: 1234 });
    expectConverged(s, ["beta", "default"], 3);
  });

  it("races an add of another space (the add commits between the revoke's decision read and its claim): the revoke re-decides, neither is lost", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const key = createKeyPair("user").publicKey;
    const to = resignUserRevocations(operator(s), rec.jwt, { [key]: 77 }).jwt;
    const decided = await decisionRead(s.env.store);
    await runMutation(s.env, add("gamma")); // the other writer wins the first round
    const r = await runMutation(s.env, revoke("beta", rec.jwt, to), decided);
    expect(r).toMatchObject({ outcome: "committed", attempts: 2, conflicts: 1, generation: 4 });
    expectConverged(s, ["beta", "default", "gamma"], 4);
    expect(confText(s)).toContain(to);
    expect(userRevocations(account(s, "beta").jwt)).toEqual({ [key]: 77 });
  });

  it("refuses space-not-found for a space outside the inventory", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    await expectCode(runMutation(s.env, revoke("gamma", rec.jwt, rec.jwt)), "space-not-found");
  });

  it("crash after the record is re-signed (before staging): the resume rolls the record back to the old JWT", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const to = resignUserRevocations(operator(s), rec.jwt, { [createKeyPair("user").publicKey]: 99 }).jwt;
    await crashAt("after-materialise", () => runMutation(s.env, revoke("beta", rec.jwt, to)));
    expect(record(s).pending).toMatchObject({ op: "revoke", limits: { space: "beta", from: rec.jwt, to } });
    expect(account(s, "beta").jwt).toBe(to);
    const r = await runMutation(s.env, resumeOnly);
    expect(r.resumed).toBe("rollback-unstaged");
    expect(account(s, "beta").jwt).toBe(rec.jwt);
    expectConverged(s, ["beta", "default"], 2);
  });

  it("crash after the promotion: the resume completes forward and keeps the revocation", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const key = createKeyPair("user").publicKey;
    const to = resignUserRevocations(operator(s), rec.jwt, { [key]: 99 }).jwt;
    await crashAt("after-rename", () => runMutation(s.env, revoke("beta", rec.jwt, to)));
    const r = await runMutation(s.env, resumeOnly);
    expect(r.resumed).toBe("complete-forward");
    expect(userRevocations(account(s, "beta").jwt)).toEqual({ [key]: 99 });
    expect(confText(s)).toContain(to);
    expectConverged(s, ["beta", "default"], 3);
  });

  it("the record's shape: a revoke claim carries its re-sign, and only a limits or revoke claim does", () => {
    const pending = (extra: Record<string, unknown>) =>
      JSON.stringify({ generation: 3, spaces: ["alpha"], appliedGeneration: 3, configDigest: null, pending: { generation: 4, op: "revoke", adds: [], removes: [], writer: "w", leaseId: "l", claimedAt: "t", ...extra } });
    const ok = parseInventoryRecord(pending({ limits: { space: "alpha", from: "a", to: "b" } }));
    expect(typeof ok === "string" ? ok : (ok as InventoryRecord).pending?.op).toBe("revoke");
    expect(parseInventoryRecord(pending({}))).toMatch(/pending.limits belongs to, and only to, a limits, revoke or rotate-key op/);
    expect(parseInventoryRecord(pending({ limits: { space: "gamma", from: "a", to: "b" } }))).toMatch(/outside/);
  });
});

describe("the creds ledger and space users", () => {
  it("space creds appends an entry (0600, no seed) and warns when the cred never expires", async () => {
    s = await withBeta();
    const root = s.root.layout.root;
    const notices: string[] = [];
    const a = mintSpaceCreds({ root, space: "beta", user: "alice", onNotice: (m) => notices.push(m) });
    const b = mintSpaceCreds({ root, space: "beta", user: "bob", admin: true, expiresInSeconds: 3600, allowSub: ["orders.>"], onNotice: (m) => notices.push(m) });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/alice never expires.*cotal space revoke beta --user alice/);
    const file = credsLedgerFile(s.root.layout, "beta");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, "utf8");
    // No user seed: neither of the two minted (read from their creds files) nor any seed-shaped token
    // (a seed stands alone; a public key may hold "SUA…" by chance, which once failed this check).
    for (const c of [a, b]) {
      const seed = /-----BEGIN USER NKEY SEED-----\s+(SU[A-Z2-7]+)\s/.exec(readFileSync(c.path, "utf8"))?.[1];
      expect(seed).toMatch(/^SU[A-Z2-7]{56}$/);
      expect(text).not.toContain(seed);
    }
    expect(text).not.toMatch(/(?<![A-Z2-7])S[UAO][A-Z2-7]{56}(?![A-Z2-7])/);
    const { entries } = parseLedger(text);
    expect(entries.map((e) => [e.user, e.publicKey, e.admin, e.path, e.expiresAt === undefined])).toEqual([
      ["alice", a.publicKey, false, a.path, true],
      ["bob", b.publicKey, true, b.path, false],
    ]);
    expect(entries[1]?.permissions.sub?.allow).toEqual(["orders.>"]);
    expect(entries[0]?.permissions.pub?.deny?.length).toBeGreaterThan(0);
  });

  it("space users: ledger rows with their state, a re-minted file marked, unknown creds on disk listed as unknown", async () => {
    s = await withBeta();
    const root = s.root.layout.root;
    const first = mintSpaceCreds({ root, space: "beta", user: "alice" });
    const second = mintSpaceCreds({ root, space: "beta", user: "alice" }); // replaces the file
    const rec = account(s, "beta");
    // a cred written before the ledger existed: only its file
    const legacy = mintUserCreds(rec, { name: "beta/legacy" });
    writeFileSync(s.root.layout.userCredsFile("beta", "legacy"), legacy.creds, { mode: 0o600 });
    const to = resignUserRevocations(operator(s), rec.jwt, { [first.publicKey]: decodeJwt(legacy.jwt).iat + 10 }).jwt;
    await runMutation(s.env, revoke("beta", rec.jwt, to));
    const r = spaceUsers(root, "beta");
    expect(r.users.map((u) => [u.user, u.publicKey, u.state, u.source, u.onDisk])).toEqual([
      ["alice", first.publicKey, "revoked", "ledger", false],
      ["alice", second.publicKey, "active", "ledger", true],
      ["legacy", legacy.publicKey, "active", "unknown (minted before the ledger)", true],
    ]);
    expect(r.users[0]?.revokedAt).toBeDefined();
    expect(usersSummary(r)).toBe("3 cred(s): 2 active, 1 revoked, 0 expired (1 minted before the ledger)");
  });

  it("a torn ledger line is counted, not fatal", () => {
    expect(parseLedger('{"user":"a"\n').unreadable).toBe(1);
    expect(parseLedger(undefined)).toEqual({ entries: [], unreadable: 0 });
  });

  it("space users refuses space-not-found for a space with no record", async () => {
    s = await withBeta();
    expect(() => spaceUsers(s.root.layout.root, "gamma")).toThrow(expect.objectContaining({ code: "space-not-found" }));
  });
});

describe("the revoked users' connections (broker/evict-users.ts)", () => {
  it("picks only the revoked users' connections of that account, by the server's authorized_user or the JWT's subject", async () => {
    s = await withBeta();
    const rec = account(s, "beta");
    const alice = mintUserCreds(rec, { name: "beta/alice" });
    const bob = mintUserCreds(rec, { name: "beta/bob" });
    const conns = [
      { cid: 1, account: rec.publicKey, authorized_user: alice.publicKey },
      { cid: 2, account: rec.publicKey, authorized_user: bob.publicKey },
      { cid: 3, account: rec.publicKey, jwt: alice.jwt },
      { cid: 4, account: "AOTHERACCOUNT", authorized_user: alice.publicKey },
      { cid: 5, account: rec.publicKey },
    ];
    expect(userConnections(conns, rec.publicKey, new Set([alice.publicKey]))).toEqual([1, 3]);
    expect(userConnections(conns, rec.publicKey, new Set())).toEqual([]);
  });
});

describe("the next change of the account prunes expired revocations (space limits)", () => {
  it("drops a revocation once every cred of its key has expired, keeps it before, and keeps one of a cred with no expiry", async () => {
    s = await withBeta();
    const root = s.root.layout.root;
    const brief = mintSpaceCreds({ root, space: "beta", user: "brief", expiresInSeconds: 60 });
    const forever = mintSpaceCreds({ root, space: "beta", user: "forever" });
    const rec = account(s, "beta");
    const revoked = resignUserRevocations(operator(s), rec.jwt, { [brief.publicKey]: 2_000_000_000, [forever.publicKey]: 2_000_000_000 }).jwt;
    const now = Date.now();
    expect(pruneExpiredRevocations(operator(s), s.root.layout, "beta", revoked, GUARDS_ON, now)).toBe(revoked);
    const later = pruneExpiredRevocations(operator(s), s.root.layout, "beta", revoked, GUARDS_ON, now + 61_000);
    expect(userRevocations(later)).toEqual({ [forever.publicKey]: 2_000_000_000 });
  });
});
