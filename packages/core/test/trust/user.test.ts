import { decode as natsDecode, parseCreds } from "@nats-io/jwt";
import { credsAuthenticator } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { isCotalError, type CotalError } from "../../src/errors.js";
import {
  createAccountTrust,
  createBrokerTrust,
  formatCreds,
  isPublicKey,
  keyPairFromSeed,
  mintSystemUserCreds,
  mintUserCreds,
  verifySignature,
  verifyJwt,
} from "../../src/trust/index.js";

const broker = createBrokerTrust({ retainSystemSigningSeed: true });
const space = createAccountTrust(broker.operator, "alpha", { kind: "space" });
const te = new TextEncoder();

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("mintUserCreds", () => {
  it("signs with the account signing key and names the issuer account", () => {
    const user = mintUserCreds(space, { name: "worker-1" });
    expect(isPublicKey(user.publicKey, "user")).toBe(true);
    expect(keyPairFromSeed(user.seed).publicKey).toBe(user.publicKey);
    expect(user.expiresAt).toBeUndefined();

    const claims = natsDecode<Record<string, unknown>>(user.jwt);
    expect(claims.iss).toBe(space.signingKey);
    expect(claims.sub).toBe(user.publicKey);
    expect(claims.name).toBe("worker-1");
    expect(claims.exp).toBeUndefined();
    expect(claims.nats).toEqual({ subs: -1, data: -1, payload: -1, issuer_account: space.publicKey, type: "user", version: 2 });
  });

  it("emits pub/sub/resp permissions only when given", () => {
    const user = mintUserCreds(space, {
      name: "scoped",
      allowPub: ["work.>", "_INBOX.>"],
      denyPub: ["work.secret"],
      allowSub: ["events.*"],
      allowResponses: true,
    });
    expect(verifyJwt(user.jwt).nats).toMatchObject({
      pub: { allow: ["work.>", "_INBOX.>"], deny: ["work.secret"] },
      sub: { allow: ["events.*"] },
      resp: { max: 1, ttl: 0 },
    });
    const denyOnly = verifyJwt(mintUserCreds(space, { name: "d", denySub: [">"] }).jwt).nats;
    expect(denyOnly.sub).toEqual({ deny: [">"] });
    expect(denyOnly.pub).toBeUndefined();
    expect(denyOnly.resp).toBeUndefined();
  });

  it("sets exp and expiresAt from expiresInSeconds", () => {
    const user = mintUserCreds(space, { name: "short", expiresInSeconds: 3600 });
    const claims = verifyJwt(user.jwt);
    expect(claims.exp).toBe(claims.iat + 3600);
    expect(user.expiresAt).toBe(new Date((claims.exp as number) * 1000).toISOString());
  });

  it("writes creds that nats.js and @nats-io/jwt parse", async () => {
    const user = mintUserCreds(space, { name: "creds" });
    expect(user.creds).toBe(formatCreds(user.jwt, user.seed));
    expect(user.creds.startsWith("-----BEGIN NATS USER JWT-----\n")).toBe(true);

    const parsed = await parseCreds(te.encode(user.creds));
    expect(parsed.jwt).toBe(user.jwt);
    expect(parsed.key).toBe(user.seed);
    expect(parsed.aid).toBe(space.publicKey);

    const auth = credsAuthenticator(te.encode(user.creds))("server-nonce") as { jwt: string; nkey: string; sig: string };
    expect(auth.jwt).toBe(user.jwt);
    expect(auth.nkey).toBe(user.publicKey);
    expect(verifySignature(user.publicKey, te.encode("server-nonce"), Buffer.from(auth.sig, "base64url"))).toBe(true);
  });

  it("refuses bad input", () => {
    const codeOf = (fn: () => unknown) => (thrown(fn) as CotalError | undefined)?.code;
    expect(codeOf(() => mintUserCreds(space, { name: "" }))).toBe("invalid-argument");
    expect(codeOf(() => mintUserCreds(space, { name: "x", allowPub: [] }))).toBe("invalid-argument");
    expect(codeOf(() => mintUserCreds(space, { name: "x", allowSub: ["a b"] }))).toBe("invalid-argument");
    expect(codeOf(() => mintUserCreds(space, { name: "x", expiresInSeconds: 0 }))).toBe("invalid-argument");
    expect(codeOf(() => mintUserCreds({ publicKey: space.signingKey.slice(1), signingSeed: space.signingSeed }, { name: "x" }))).toBe(
      "invalid-argument",
    );
    expect(codeOf(() => mintUserCreds({ publicKey: space.publicKey, signingSeed: broker.operator.seed }, { name: "x" }))).toBe(
      "invalid-seed",
    );
    expect(codeOf(() => mintUserCreds({ publicKey: space.publicKey, signingSeed: "SAbad" }, { name: "x" }))).toBe("invalid-seed");
    expect(codeOf(() => formatCreds("not a jwt", mintUserCreds(space, { name: "x" }).seed))).toBe("invalid-jwt");
    expect(codeOf(() => formatCreds(mintUserCreds(space, { name: "x" }).jwt, space.signingSeed))).toBe("invalid-seed");
  });
});

describe("mintSystemUserCreds", () => {
  it("mints system users with the retained signing seed", () => {
    const user = mintSystemUserCreds(broker.system, { name: "sys" });
    const claims = verifyJwt(user.jwt);
    expect(claims.iss).toBe(broker.system.signingKey);
    expect(claims.nats.issuer_account).toBe(broker.system.publicKey);
  });

  it("refuses with system-seed-absent when the seed was not retained", () => {
    const bare = createBrokerTrust({ retainSystemSigningSeed: false });
    const err = thrown(() => mintSystemUserCreds(bare.system, { name: "sys" }));
    expect(isCotalError(err, "system-seed-absent")).toBe(true);
    expect((err as CotalError).next).toBe("cotal down && cotal up --rotate-sys");
  });
});
