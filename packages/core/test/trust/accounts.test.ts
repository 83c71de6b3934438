import { decode as natsDecode } from "@nats-io/jwt";
import { describe, expect, it } from "vitest";
import { isCotalError } from "../../src/errors.js";
import { DEFAULT_SPACE_QUOTA } from "../../src/trust/limits.js";
import {
  NO_JETSTREAM,
  UNLIMITED_JETSTREAM,
  quotaLimits,
  createAccountTrust,
  createBrokerTrust,
  createKeyPair,
  isPublicKey,
  keyPairFromSeed,
  verifyJwt,
  type AccountLimits,
} from "../../src/trust/index.js";

const LIMIT_FIELDS = [
  "subs",
  "data",
  "payload",
  "imports",
  "exports",
  "wildcards",
  "conn",
  "leaf",
  "mem_storage",
  "disk_storage",
  "streams",
  "consumer",
  "max_ack_pending",
  "mem_max_stream_bytes",
  "disk_max_stream_bytes",
  "max_bytes_required",
].sort();

function limitsOf(jwt: string): AccountLimits {
  return (natsDecode<{ limits: AccountLimits }>(jwt).nats as { limits: AccountLimits }).limits;
}

function expectCode(fn: () => unknown, code: Parameters<typeof isCotalError>[1]): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(isCotalError(thrown, code)).toBe(true);
}

describe("limits", () => {
  it("both presets carry every field, with conn/subs explicit", () => {
    expect(Object.keys(UNLIMITED_JETSTREAM).sort()).toEqual(LIMIT_FIELDS);
    expect(Object.keys(NO_JETSTREAM).sort()).toEqual(LIMIT_FIELDS);
    for (const preset of [UNLIMITED_JETSTREAM, NO_JETSTREAM]) {
      expect(preset.conn).toBe(-1);
      expect(preset.subs).toBe(-1);
      expect(preset.wildcards).toBe(true);
    }
    expect(UNLIMITED_JETSTREAM.mem_storage).toBe(-1);
    expect(UNLIMITED_JETSTREAM.disk_storage).toBe(-1);
    expect(NO_JETSTREAM.mem_storage).toBe(0);
    expect(NO_JETSTREAM.disk_storage).toBe(0);
    expect(Object.isFrozen(UNLIMITED_JETSTREAM)).toBe(true);
  });
});

describe("createBrokerTrust", () => {
  it("mints a self-signed operator naming a JetStream-off system account", () => {
    const trust = createBrokerTrust({ name: "test-op", retainSystemSigningSeed: true });
    expect(trust.generation).toBe(1);
    expect(new Date(trust.createdAt).toISOString()).toBe(trust.createdAt);
    expect(isPublicKey(trust.operator.publicKey, "operator")).toBe(true);
    expect(keyPairFromSeed(trust.operator.seed).publicKey).toBe(trust.operator.publicKey);

    const op = natsDecode<Record<string, unknown>>(trust.operator.jwt);
    expect(op.iss).toBe(trust.operator.publicKey);
    expect(op.sub).toBe(trust.operator.publicKey);
    expect(op.name).toBe("test-op");
    expect(op.nats).toEqual({ system_account: trust.system.publicKey, type: "operator", version: 2 });

    const sys = natsDecode<Record<string, unknown>>(trust.system.jwt);
    expect(sys.iss).toBe(trust.operator.publicKey);
    expect(sys.sub).toBe(trust.system.publicKey);
    expect(sys.nats).toMatchObject({ type: "account", version: 2, signing_keys: [trust.system.signingKey] });
    expect(limitsOf(trust.system.jwt)).toEqual(NO_JETSTREAM);
    expect(isPublicKey(trust.system.signingKey, "account")).toBe(true);
    expect(trust.system.signingKey).not.toBe(trust.system.publicKey);
    expect(keyPairFromSeed(trust.system.signingSeed as string).publicKey).toBe(trust.system.signingKey);
  });

  it("drops the system signing seed unless asked to retain it", () => {
    const trust = createBrokerTrust({ retainSystemSigningSeed: false });
    expect("signingSeed" in trust.system).toBe(false);
    expect(verifyJwt(trust.operator.jwt).name).toBe("cotal");
    // nothing else secret about the system account is kept
    expect(JSON.stringify(trust.system)).not.toMatch(/"S[OAU][A-Z2-7]{56}"/);
  });
});

describe("createAccountTrust", () => {
  const broker = createBrokerTrust({ retainSystemSigningSeed: false });

  it.each(["space", "authority"] as const)("%s accounts: operator-signed, JetStream on, conn/subs explicit", (kind) => {
    const acct = createAccountTrust(broker.operator, `acct-${kind}`, { kind });
    expect(acct.kind).toBe(kind);
    expect(acct.name).toBe(`acct-${kind}`);
    expect(acct.issuer).toBe(broker.operator.publicKey);
    expect(isPublicKey(acct.publicKey, "account")).toBe(true);
    expect(keyPairFromSeed(acct.signingSeed).publicKey).toBe(acct.signingKey);

    const claims = natsDecode<Record<string, unknown>>(acct.jwt);
    expect(claims.iss).toBe(broker.operator.publicKey);
    expect(claims.sub).toBe(acct.publicKey);
    expect(claims.name).toBe(`acct-${kind}`);
    expect(claims.nats).toMatchObject({ type: "account", version: 2, signing_keys: [acct.signingKey] });
    const limits = limitsOf(acct.jwt);
    // a tenant starts from its template's quota; the authority account is bounded only by the server max
    expect(limits).toEqual(kind === "space" ? quotaLimits(DEFAULT_SPACE_QUOTA) : UNLIMITED_JETSTREAM);
    expect(acct.limits).toEqual(limits);
    expect(limits.conn).toBe(kind === "space" ? DEFAULT_SPACE_QUOTA.conns : -1);
    expect(limits.subs).toBe(kind === "space" ? DEFAULT_SPACE_QUOTA.subs : -1);
    expect(limits.mem_storage !== 0 || limits.disk_storage !== 0).toBe(true);
    // the only seed kept is the signing seed: the identity seed is dropped
    expect(Object.values(acct).filter((v) => /^S[OAU][A-Z2-7]{56}$/.test(v))).toEqual([acct.signingSeed]);
  });

  it("merges limit overrides over the JetStream defaults", () => {
    const acct = createAccountTrust(broker.operator, "small", {
      kind: "space",
      limits: { conn: 10, disk_storage: 1_000_000, mem_storage: undefined },
    });
    expect(limitsOf(acct.jwt)).toEqual({ ...quotaLimits(DEFAULT_SPACE_QUOTA), conn: 10, disk_storage: 1_000_000 });
  });

  it("refuses bad limits, names, kinds and operator keys", () => {
    expectCode(() => createAccountTrust(broker.operator, "x", { kind: "space", limits: { conn: -2 } }), "invalid-argument");
    expectCode(() => createAccountTrust(broker.operator, "x", { kind: "space", limits: { subs: 1.5 } }), "invalid-argument");
    expectCode(
      () => createAccountTrust(broker.operator, "x", { kind: "space", limits: { wildcards: 1 as unknown as boolean } }),
      "invalid-argument",
    );
    expectCode(
      () => createAccountTrust(broker.operator, "x", { kind: "space", limits: { bogus: 1 } as Partial<AccountLimits> }),
      "invalid-argument",
    );
    expectCode(() => createAccountTrust(broker.operator, "", { kind: "space" }), "invalid-argument");
    expectCode(() => createAccountTrust(broker.operator, "x", { kind: "tenant" as "space" }), "invalid-argument");
    const stranger = createKeyPair("operator");
    expectCode(() => createAccountTrust({ publicKey: broker.operator.publicKey, seed: stranger.seed }, "x", { kind: "space" }), "invalid-argument");
    const acctKey = createKeyPair("account");
    expectCode(() => createAccountTrust({ publicKey: acctKey.publicKey, seed: acctKey.seed }, "x", { kind: "space" }), "invalid-argument");
  });
});
