import { decode as natsDecode } from "@nats-io/jwt";
import { describe, expect, it } from "vitest";
import { signJwt } from "../../src/trust/jwt.js";
import { createAccountTrust, createBrokerTrust, mintUserCreds, resignAccountLimits, resignAccountRevocations, revokeAllBefore, verifyJwt } from "../../src/trust/index.js";
import { codeOf } from "../fixtures/code-of.js";
import { issuedAfter } from "../../src/backup/quiesce.js";

// The quiesce/lift re-sign of an online backup (README: backup): only revocations["*"] moves.

describe("resignAccountRevocations", () => {
  const broker = createBrokerTrust({ retainSystemSigningSeed: true });
  const other = createBrokerTrust({ retainSystemSigningSeed: true });
  const acct = createAccountTrust(broker.operator, "alpha", { kind: "space" });
  const withoutJti = (jwt: string) => {
    const { jti: _j, iat: _i, ...rest } = verifyJwt(jwt);
    return rest;
  };

  it("sets '*' and keeps every other claim", () => {
    const { jwt } = resignAccountRevocations(broker.operator, acct.jwt, 1_800_000_000);
    const before = verifyJwt(acct.jwt);
    const after = verifyJwt(jwt);
    expect(after.nats.revocations).toEqual({ "*": 1_800_000_000 });
    const { revocations: _r, ...afterRest } = after.nats;
    expect(afterRest).toEqual(before.nats);
    expect({ ...after, nats: afterRest, jti: before.jti, iat: before.iat }).toEqual(before);
    expect(revokeAllBefore(jwt)).toBe(1_800_000_000);
    expect(revokeAllBefore(acct.jwt)).toBeUndefined();
    // the upstream decoder reads the same map nats-server does
    expect((natsDecode(jwt).nats as { revocations?: Record<string, number> }).revocations?.["*"]).toBe(1_800_000_000);
  });

  it("the lift removes '*' and restores the pre-quiesce claims exactly", () => {
    const quiesced = resignAccountRevocations(broker.operator, acct.jwt, 1_800_000_000).jwt;
    const lifted = resignAccountRevocations(broker.operator, quiesced, undefined).jwt;
    expect(withoutJti(lifted)).toEqual(withoutJti(acct.jwt));
    expect("revocations" in verifyJwt(lifted).nats).toBe(false);
    expect(revokeAllBefore(lifted)).toBeUndefined();
  });

  it("keeps per-user revocations and limits another re-sign set", () => {
    const limited = verifyJwt(resignAccountLimits(broker.operator, acct.jwt, { conn: 3 }).jwt);
    const user = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4";
    const withUser = signJwt({ iss: limited.iss, sub: limited.sub, name: limited.name, nats: { ...limited.nats, revocations: { [user]: 1_700_000_000 } } }, broker.operator.seed);
    const quiesced = verifyJwt(resignAccountRevocations(broker.operator, withUser, 1_800_000_000).jwt);
    expect(quiesced.nats.revocations).toEqual({ [user]: 1_700_000_000, "*": 1_800_000_000 });
    expect((quiesced.nats.limits as { conn: number }).conn).toBe(3);
    const lifted = verifyJwt(resignAccountRevocations(broker.operator, resignAccountRevocations(broker.operator, withUser, 1_800_000_000).jwt, undefined).jwt);
    expect(lifted.nats.revocations).toEqual({ [user]: 1_700_000_000 });
    expect((lifted.nats.limits as { conn: number }).conn).toBe(3);
  });

  it("refuses a foreign operator and a time that is not whole seconds", () => {
    expect(codeOf(() => resignAccountRevocations(other.operator, acct.jwt, 1_800_000_000))).toBe("foreign-operator");
    expect(codeOf(() => resignAccountRevocations(broker.operator, acct.jwt, 1.5))).toBe("invalid-argument");
    expect(codeOf(() => resignAccountRevocations(broker.operator, acct.jwt, 0))).toBe("invalid-argument");
  });
});

// The quiesce's own user is dated after T (backup/quiesce.ts), so it connects without waiting for the clock.
describe("cotal's user in a quiesced namespace", () => {
  const broker = createBrokerTrust({ retainSystemSigningSeed: true });
  const acct = createAccountTrust(broker.operator, "alpha", { kind: "space" });

  it("is issued after the revocation: iat > T even in T's own second, never before now", () => {
    const now = Math.floor(Date.now() / 1000);
    expect(issuedAfter(now)).toBe(now + 1);
    expect(issuedAfter(now - 100)).toBeGreaterThanOrEqual(now); // a T long past: now, not a backdated iat
    const u = mintUserCreds(acct, { name: "cotal-backup-alpha", expiresInSeconds: 60, issuedAt: issuedAfter(now) });
    const claims = verifyJwt(u.jwt);
    expect(claims.iat).toBe(now + 1);
    expect(claims.exp).toBe(now + 61);
    // nats-server refuses a user whose iat <= revocations["*"]: T's own users stay refused, ours is not
    expect(claims.iat > now).toBe(true);
  });

  it("refuses an iat that is not whole seconds", () => {
    expect(codeOf(() => mintUserCreds(acct, { name: "x", issuedAt: 1.5 }))).toBe("invalid-argument");
    expect(codeOf(() => mintUserCreds(acct, { name: "x", issuedAt: -1 }))).toBe("invalid-argument");
  });
});
