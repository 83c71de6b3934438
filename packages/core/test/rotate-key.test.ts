/**
 * Issue 33, "Rotate a space's signing key": the signing-key re-sign (trust/signing-keys.ts), the op
 * through the in-memory saga (two proven changes, cotal's creds under the root re-signed, the staged
 * rotation cleared), --keep-old and --finish, a kill at every step converging by re-running the
 * verb, what status says of each stage, and the SKIP_SIGNING_KEY_REMOVAL guard.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { mintSpaceCreds } from "../src/ops/creds.js";
import { rotateKey, rotationNext, rotationStage } from "../src/ops/space-rotate-key.js";
import { keyRotationsOf } from "../src/ops/rotate-key-status.js";
import { parseInventoryRecord, type InventoryRecord } from "../src/inventory/record.js";
import { accountInventory, deleteSpaceAccount, loadSpaceAccount } from "../src/root/account-store.js";
import { loadBrokerTrust } from "../src/root/broker-store.js";
import { keyRotationFile, parseKeyRotation, readKeyRotation } from "../src/root/key-rotation.js";
import type { AccountRecord } from "../src/root/records.js";
import { runMutation } from "../src/saga/mutation.js";
import { createKeyPair, decodeJwt, parseCreds } from "../src/trust/index.js";
import { accountSigningKeys, reissueUserCreds, resignSigningKeys } from "../src/trust/signing-keys.js";
import { resignUserRevocations } from "../src/trust/user-revocations.js";
import { FailpointError, resetFailpoints } from "../src/failpoints.js";
import { memorySaga, type MemorySaga } from "../src/testing/index.js";
import { GUARDS_ON } from "../src/guards.js";
import { add, confText, expectConverged, record } from "./saga-memory-helpers.js";

let s: MemorySaga;
afterEach(() => s?.close());

const account = (m: MemorySaga, space = "beta") => loadSpaceAccount(m.root.layout, space) as AccountRecord;
const operator = (m: MemorySaga) => loadBrokerTrust(m.root.layout).operator;
const issuerOf = (path: string) => decodeJwt(parseCreds(readFileSync(path, "utf8")).jwt).iss;

async function withBeta(guards = GUARDS_ON): Promise<MemorySaga> {
  const m = memorySaga({ guards });
  await runMutation(m.env, add("beta"));
  return m;
}

/** Runs `fn` with COTAL_FAILPOINT=<spec>:throw armed; true when that failpoint stopped it. */
async function killedAt(spec: string, fn: () => Promise<unknown>): Promise<boolean> {
  process.env.COTAL_FAILPOINT = `${spec}:throw`;
  resetFailpoints();
  try {
    await fn();
    return false;
  } catch (err) {
    if (err instanceof FailpointError) return true;
    throw err;
  } finally {
    delete process.env.COTAL_FAILPOINT;
    resetFailpoints();
  }
}

describe("the signing-key re-sign (trust/signing-keys.ts)", () => {
  it("adds and removes a key, keeping the limits, the revocations and every other claim; never leaves none", async () => {
    s = await withBeta();
    const rec = account(s);
    const user = createKeyPair("user").publicKey;
    const revoked = resignUserRevocations(operator(s), rec.jwt, { [user]: 100 }).jwt;
    const next = createKeyPair("account").publicKey;
    const both = resignSigningKeys(operator(s), revoked, { add: next });
    expect(both.signingKeys).toEqual([rec.signingKey, next]);
    const only = resignSigningKeys(operator(s), both.jwt, { remove: rec.signingKey });
    expect(accountSigningKeys(only.jwt)).toEqual([next]);
    const c = decodeJwt(only.jwt);
    expect([c.sub, c.nats.limits, c.nats.revocations]).toEqual([rec.publicKey, decodeJwt(rec.jwt).nats.limits, { [user]: 100 }]);
    expect(resignSigningKeys(operator(s), both.jwt, { add: next }).signingKeys).toEqual([rec.signingKey, next]); // adding twice: once
    expect(() => resignSigningKeys(operator(s), only.jwt, { remove: next })).toThrow(/no signing key/);
    expect(() => resignSigningKeys(operator(s), rec.jwt, { add: user })).toThrow(/not an account signing key/);
  });

  it("re-issues a user's cred with another key: the same user key, seed, name, permissions and expiry", async () => {
    s = await withBeta();
    const minted = mintSpaceCreds({ root: s.root.layout.root, space: "beta", user: "app", expiresInSeconds: 3600 });
    const old = parseCreds(readFileSync(minted.path, "utf8"));
    const signer = createKeyPair("account");
    const re = reissueUserCreds({ publicKey: account(s).publicKey, signingSeed: signer.seed }, old.jwt, old.seed);
    const [a, b] = [decodeJwt(old.jwt), decodeJwt(re.jwt)];
    expect(b.iss).toBe(signer.publicKey);
    expect([b.sub, b.name, b.exp, b.nats.pub, b.nats.sub, b.nats.issuer_account]).toEqual([a.sub, a.name, a.exp, a.nats.pub, a.nats.sub, a.nats.issuer_account]);
    expect(parseCreds(re.creds).seed).toBe(old.seed);
    expect(() => reissueUserCreds({ publicKey: account(s).publicKey, signingSeed: signer.seed }, old.jwt, createKeyPair("user").seed)).toThrow(/seed is not the key/);
  });
});

describe("op rotate-key through the saga (in memory)", () => {
  it("two proven changes: the new key in, cotal's creds re-signed with it, the old key out; revoked and --out creds left alone", async () => {
    s = await withBeta();
    const root = s.root.layout.root;
    const old = account(s);
    const app = mintSpaceCreds({ root, space: "beta", user: "app" });
    const gone = mintSpaceCreds({ root, space: "beta", user: "gone" });
    const outside = mintSpaceCreds({ root, space: "beta", user: "ext", out: join(root, "..", `ext-${Date.now()}.creds`) });
    const to = resignUserRevocations(operator(s), old.jwt, { [gone.publicKey]: Math.floor(Date.now() / 1000) + 1 }).jwt;
    await runMutation(s.env, { op: "revoke", verb: "space revoke", revokeChange: { space: "beta", from: old.jwt, to } });
    const r = await rotateKey(s.env, "beta", {});
    expect(r).toMatchObject({ outcome: "rotated", changes: 2, reloads: 2, oldKey: old.signingKey, generation: 5, continued: false, reminted: [app.path] });
    const now = account(s);
    expect(accountSigningKeys(now.jwt)).toEqual([r.newKey]);
    expect([now.signingKey, now.publicKey]).toEqual([r.newKey, old.publicKey]);
    expect(confText(s)).toContain(now.jwt);
    expect(issuerOf(app.path)).toBe(r.newKey);
    expect(issuerOf(gone.path)).toBe(old.signingKey); // a revoked cred is never re-issued (a later iat would revive it)
    expect(issuerOf(outside.path)).toBe(old.signingKey);
    expect(existsSync(keyRotationFile(s.root.layout, "beta"))).toBe(false);
    expectConverged(s, ["beta", "default"], 5);
    // the ledger knows the re-issued cred
    const ledger = readFileSync(join(s.root.layout.spaceDir("beta"), "creds-ledger.jsonl"), "utf8").trim().split("\n");
    expect(JSON.parse(ledger.at(-1) as string)).toMatchObject({ user: "app", publicKey: app.publicKey, path: app.path });
    expect(ledger.join("\n")).not.toContain(parseCreds(readFileSync(app.path, "utf8")).seed); // no seed in the ledger
  });

  it("--keep-old stops with both keys in and the creds moved; status names it; --finish removes the old key; --finish again is a no-op", async () => {
    s = await withBeta();
    const old = account(s);
    const kept = await rotateKey(s.env, "beta", { keepOldSeconds: 3600 });
    expect(kept).toMatchObject({ outcome: "keeping-old", changes: 1 });
    expect(Date.parse(kept.keepOldUntil as string)).toBeGreaterThan(Date.now() + 3_500_000);
    expect(accountSigningKeys(account(s).jwt)).toEqual([old.signingKey, kept.newKey]);
    expect(account(s).signingKey).toBe(kept.newKey);
    const st = keyRotationsOf(s.root.layout, accountInventory(s.root.layout).spaces);
    expect(st).toEqual([expect.objectContaining({ space: "beta", stage: "keeping-old", interrupted: false, next: "cotal space rotate-key beta --finish   # removes the old signing key now" })]);
    expect(JSON.stringify(st)).not.toContain(readKeyRotation(s.root.layout, "beta")?.newSeed); // no seed in what status prints
    const again = await rotateKey(s.env, "beta", {}); // a plain re-run keeps what was started
    expect(again).toMatchObject({ outcome: "keeping-old", changes: 0, continued: true });
    const done = await rotateKey(s.env, "beta", { finish: true });
    expect(done).toMatchObject({ outcome: "finished", changes: 1, newKey: kept.newKey });
    expect(accountSigningKeys(account(s).jwt)).toEqual([kept.newKey]);
    expect(await rotateKey(s.env, "beta", { finish: true })).toMatchObject({ outcome: "noop", changes: 0 });
    expect(keyRotationsOf(s.root.layout, accountInventory(s.root.layout).spaces)).toEqual([]);
  });

  it("refuses a --keep-old with --finish, and a space outside the inventory", async () => {
    s = await withBeta();
    await expect(rotateKey(s.env, "gamma", {})).rejects.toMatchObject({ code: "space-not-found" });
    expect(readKeyRotation(s.root.layout, "gamma")).toBeUndefined();
  });

  it("a rotation staged for an account since replaced (the space removed and added again) is discarded, not finished against the new one", async () => {
    s = await withBeta();
    const kept = await rotateKey(s.env, "beta", { keepOldSeconds: 60 });
    const staged = readKeyRotation(s.root.layout, "beta");
    await runMutation(s.env, { op: "remove", removes: ["beta"], verb: "space rm beta" });
    deleteSpaceAccount(s.root.layout, "beta"); // what space rm reaps after its commit
    await runMutation(s.env, add("beta"));
    const fresh = account(s);
    expect(staged?.newKey).toBe(kept.newKey);
    expect(keyRotationsOf(s.root.layout, accountInventory(s.root.layout).spaces)).toEqual([]);
    const r = await rotateKey(s.env, "beta", {});
    expect(r).toMatchObject({ outcome: "rotated", oldKey: fresh.signingKey, continued: false });
    expect(r.newKey).not.toBe(kept.newKey);
    expect(accountSigningKeys(account(s).jwt)).toEqual([r.newKey]);
  });

  it("SKIP_SIGNING_KEY_REMOVAL (the live cell's positive control): the second change leaves the old key in", async () => {
    s = await withBeta({ ...GUARDS_ON, SKIP_SIGNING_KEY_REMOVAL: true });
    const old = account(s);
    const r = await rotateKey(s.env, "beta", {});
    expect(r.changes).toBe(2);
    expect(accountSigningKeys(account(s).jwt)).toEqual([old.signingKey, r.newKey]);
  });
});

// Every step a kill can stop the rotation at: its own failpoints and the saga's, in each of the two changes.
const KILL_POINTS = [
  "rotate-key-staged",
  ...["after-claim", "after-materialise", "after-stage", "after-rename", "after-proof", "after-commit"].map((p) => `${p}#1`),
  "rotate-key-added",
  "rotate-key-signer",
  "rotate-key-reminted",
  ...["after-claim", "after-materialise", "after-stage", "after-rename", "after-proof", "after-commit"].map((p) => `${p}#2`),
];

describe("a kill at each step of a rotation converges by re-running the verb (in memory)", () => {
  it.each(KILL_POINTS)("killed at %s", async (point) => {
    s = await withBeta();
    const old = account(s);
    const app = mintSpaceCreds({ root: s.root.layout.root, space: "beta", user: "app" });
    expect(await killedAt(point, () => rotateKey(s.env, "beta", {}))).toBe(true);
    const staged = readKeyRotation(s.root.layout, "beta");
    const st = keyRotationsOf(s.root.layout, accountInventory(s.root.layout).spaces);
    // a kill after the old key is out leaves nothing staged to name; any other names the re-run
    if (staged && st.length > 0) expect(st[0]).toMatchObject({ interrupted: true, next: rotationNext("beta", st[0]?.stage ?? "adding") });
    const r = await rotateKey(s.env, "beta", {});
    const newKey = staged?.newKey ?? account(s).signingKey;
    expect(r.outcome).toBe("rotated");
    expect(accountSigningKeys(account(s).jwt)).toEqual([newKey]);
    expect(account(s).signingKey).toBe(newKey);
    expect(newKey).not.toBe(old.signingKey);
    expect(issuerOf(app.path)).toBe(newKey);
    expect(record(s).pending).toBeNull();
    expect(confText(s)).toContain(account(s).jwt);
    expect(keyRotationsOf(s.root.layout, accountInventory(s.root.layout).spaces)).toEqual([]);
  });
});

describe("the rotation's stage and file", () => {
  const oldKey = createKeyPair("account").publicKey;
  const n = createKeyPair("account");
  const base = { format: "cotal.key-rotation/1" as const, space: "beta", oldKey, newKey: n.publicKey, newSeed: n.seed, startedAt: new Date(0).toISOString() };
  it("reads each stage from the record's JWT and signer", async () => {
    s = await withBeta();
    const rec = account(s);
    const withBoth = resignSigningKeys(operator(s), rec.jwt, { add: n.publicKey, remove: rec.signingKey }).jwt;
    const withOld = resignSigningKeys(operator(s), withBoth, { add: oldKey }).jwt;
    const justNew = resignSigningKeys(operator(s), withOld, { remove: oldKey }).jwt;
    expect(rotationStage(base, { jwt: rec.jwt, signingKey: oldKey })).toBe("adding");
    expect(rotationStage(base, { jwt: withOld, signingKey: oldKey })).toBe("re-minting");
    expect(rotationStage({ ...base, reminted: true }, { jwt: withOld, signingKey: n.publicKey })).toBe("removing");
    expect(rotationStage({ ...base, reminted: true, keepOldUntil: new Date().toISOString() }, { jwt: withOld, signingKey: n.publicKey })).toBe("keeping-old");
    expect(rotationStage({ ...base, reminted: true }, { jwt: justNew, signingKey: n.publicKey })).toBe("removed");
  });

  it("a torn or mismatched file is not a rotation", () => {
    expect(parseKeyRotation(JSON.stringify(base))).toEqual(base);
    expect(parseKeyRotation("{")).toBeUndefined();
    expect(parseKeyRotation(JSON.stringify({ ...base, newKey: oldKey }))).toBeUndefined();
    expect(parseKeyRotation(JSON.stringify({ ...base, space: "Bad Name" }))).toBeUndefined();
  });

  it("a rotate-key claim carries its re-sign in the record", () => {
    const pending = (extra: Record<string, unknown>) =>
      JSON.stringify({ generation: 3, spaces: ["alpha"], appliedGeneration: 3, configDigest: null, pending: { generation: 4, op: "rotate-key", adds: [], removes: [], writer: "w", leaseId: "l", claimedAt: "t", ...extra } });
    const ok = parseInventoryRecord(pending({ limits: { space: "alpha", from: "a", to: "b" } }));
    expect(typeof ok === "string" ? ok : (ok as InventoryRecord).pending?.op).toBe("rotate-key");
    expect(parseInventoryRecord(pending({}))).toMatch(/pending.limits belongs to, and only to, a limits, revoke or rotate-key op/);
  });
});
