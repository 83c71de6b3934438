import { createHash } from "node:crypto";
import { decode as natsDecode, encodeAccount } from "@nats-io/jwt";
import { createAccount, createOperator } from "@nats-io/nkeys";
import { describe, expect, it } from "vitest";
import { isCotalError } from "../../src/errors.js";
import { base32Encode } from "../../src/trust/codec.js";
import { createKeyPair, decodeJwt, signJwt, verifyJwt, type JwtClaims } from "../../src/trust/index.js";

function b64json(segment: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment, "base64url").toString("utf8")) as Record<string, unknown>;
}

function expectCode(fn: () => unknown, code: Parameters<typeof isCotalError>[1]): void {
  expect(fn).toThrow();
  try {
    fn();
  } catch (err) {
    expect(isCotalError(err, code)).toBe(true);
  }
}

function mint(overrides: Partial<Omit<JwtClaims, "jti">> = {}) {
  const operator = createKeyPair("operator");
  const account = createKeyPair("account");
  const token = signJwt(
    {
      iss: operator.publicKey,
      sub: account.publicKey,
      name: "demo",
      nats: { limits: { conn: -1, subs: -1 }, type: "account", version: 2 },
      ...overrides,
    },
    operator.seed,
  );
  return { operator, account, token };
}

describe("signJwt", () => {
  it("produces a v2 nkey JWT that @nats-io/jwt decodes and verifies", () => {
    const { operator, account, token } = mint();
    const [header, payload, signature] = token.split(".") as [string, string, string];
    expect(token).not.toContain("=");
    expect(b64json(header)).toEqual({ typ: "JWT", alg: "ed25519-nkey" });
    expect(Buffer.from(signature, "base64url")).toHaveLength(64);

    const theirs = natsDecode<Record<string, unknown>>(token); // throws unless the signature verifies
    expect(theirs.iss).toBe(operator.publicKey);
    expect(theirs.sub).toBe(account.publicKey);
    expect(theirs.name).toBe("demo");
    expect(theirs.nats).toEqual({ limits: { conn: -1, subs: -1 }, type: "account", version: 2 });
    expect(Math.abs((theirs.iat as number) - Date.now() / 1000)).toBeLessThan(5);

    // jti = base32(SHA-512/256(claims JSON without jti)), no padding
    const { jti, ...rest } = b64json(payload);
    expect(jti).toBe(base32Encode(createHash("sha512-256").update(JSON.stringify(rest)).digest()));
    expect(jti).toMatch(/^[A-Z2-7]{52}$/);
  });

  it("keeps iat and exp when given", () => {
    const { token } = mint({ iat: 1_700_000_000, exp: 1_700_000_600 });
    const claims = verifyJwt(token);
    expect(claims.iat).toBe(1_700_000_000);
    expect(claims.exp).toBe(1_700_000_600);
  });

  it("refuses a signer that does not match iss, and malformed claims", () => {
    const operator = createKeyPair("operator");
    const other = createKeyPair("operator");
    const account = createKeyPair("account");
    const base = { iss: operator.publicKey, sub: account.publicKey, name: "x", nats: { type: "account", version: 2 as const } };
    expectCode(() => signJwt(base, other.seed), "invalid-argument");
    expectCode(() => signJwt({ ...base, sub: "nope" }, operator.seed), "invalid-argument");
    expectCode(() => signJwt({ ...base, iat: 100, exp: 50 }, operator.seed), "invalid-argument");
    expectCode(() => signJwt({ ...base, nats: { type: "account", version: 1 as unknown as 2 } }, operator.seed), "invalid-argument");
    expectCode(() => signJwt(base, "SOnotaseed"), "invalid-seed");
  });
});

describe("decodeJwt / verifyJwt", () => {
  it("round-trips our tokens", () => {
    const { token, operator } = mint();
    expect(verifyJwt(token)).toEqual(decodeJwt(token));
    expect(decodeJwt(token).iss).toBe(operator.publicKey);
  });

  it("accepts JWTs minted by @nats-io/jwt", async () => {
    const op = createOperator();
    const acct = createAccount();
    const token = await encodeAccount("theirs", acct, { limits: { conn: -1 } }, { signer: op });
    const claims = verifyJwt(token);
    expect(claims.sub).toBe(acct.getPublicKey());
    expect(claims.iss).toBe(op.getPublicKey());
    expect(claims.nats.type).toBe("account");
  });

  it("verifyJwt rejects a tampered payload or signature; decodeJwt does not check signatures", () => {
    const { token } = mint();
    const [header, payload, signature] = token.split(".") as [string, string, string];
    const body = b64json(payload);
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...body, name: "evil" })).toString("base64url")}.${signature}`;
    expect(decodeJwt(tampered).name).toBe("evil");
    expectCode(() => verifyJwt(tampered), "invalid-jwt");

    const otherSig = mint().token.split(".")[2] as string;
    expectCode(() => verifyJwt(`${header}.${payload}.${otherSig}`), "invalid-jwt");
    expectCode(() => verifyJwt(`${header}.${payload}.${signature.slice(0, -4)}`), "invalid-jwt");

    // a different issuer claimed in the payload does not match the signature either
    const reissued = { ...body, iss: createKeyPair("operator").publicKey };
    expectCode(
      () => verifyJwt(`${header}.${Buffer.from(JSON.stringify(reissued)).toString("base64url")}.${signature}`),
      "invalid-jwt",
    );
  });

  it("refuses malformed tokens", () => {
    const { token } = mint();
    const [, payload, signature] = token.split(".") as [string, string, string];
    const v1Header = Buffer.from(JSON.stringify({ typ: "JWT", alg: "ed25519" })).toString("base64url");
    const noNats = Buffer.from(JSON.stringify({ ...b64json(payload), nats: undefined })).toString("base64url");
    for (const bad of ["", "a.b", "a.b.c.d", "!!!.###.$$$", `${v1Header}.${payload}.${signature}`, `${token.split(".")[0]}.${noNats}.${signature}`]) {
      expectCode(() => decodeJwt(bad), "invalid-jwt");
      expectCode(() => verifyJwt(bad), "invalid-jwt");
    }
  });
});
