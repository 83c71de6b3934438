import { createAccount, createOperator, createServer, createUser, fromPublic, fromSeed } from "@nats-io/nkeys";
import { describe, expect, it } from "vitest";
import { isCotalError } from "../../src/errors.js";
import { base32Decode, base32Encode, crc16 } from "../../src/trust/codec.js";
import {
  createKeyPair,
  isPublicKey,
  keyPairFromSeed,
  signWithSeed,
  verifySignature,
  type KeyRole,
} from "../../src/trust/index.js";

const te = new TextEncoder();
const ROLES: Array<[KeyRole, string]> = [
  ["operator", "O"],
  ["account", "A"],
  ["user", "U"],
];

/** Flips one base32 character to another valid one, so only the CRC can catch it. */
function flipChar(value: string, index: number): string {
  const c = value[index];
  return value.slice(0, index) + (c === "B" ? "C" : "B") + value.slice(index + 1);
}

function expectCotalError(fn: () => unknown, code: Parameters<typeof isCotalError>[1]): Error {
  try {
    fn();
  } catch (err) {
    expect(isCotalError(err, code)).toBe(true);
    return err as Error;
  }
  throw new Error(`expected CotalError ${code}`);
}

describe("codec", () => {
  it("base32 matches RFC 4648 vectors (no padding) and round-trips", () => {
    const vectors: Array<[string, string]> = [
      ["", ""],
      ["f", "MY"],
      ["fo", "MZXQ"],
      ["foo", "MZXW6"],
      ["foob", "MZXW6YQ"],
      ["fooba", "MZXW6YTB"],
      ["foobar", "MZXW6YTBOI"],
    ];
    for (const [plain, encoded] of vectors) {
      expect(base32Encode(te.encode(plain))).toBe(encoded);
      expect(Buffer.from(base32Decode(encoded) ?? []).toString()).toBe(plain);
    }
    expect(base32Decode("MZXW6!")).toBeUndefined();
    expect(base32Decode("mzxw6")).toBeUndefined();
  });

  it("crc16 is CRC-16/XMODEM", () => {
    expect(crc16(te.encode("123456789"))).toBe(0x31c3);
  });
});

describe("nkeys", () => {
  it.each(ROLES)("%s keys carry the nkeys prefixes and round-trip through @nats-io/nkeys", (role, letter) => {
    const kp = createKeyPair(role);
    expect(kp.role).toBe(role);
    expect(kp.publicKey).toMatch(new RegExp(`^${letter}[A-Z2-7]{55}$`));
    expect(kp.seed).toMatch(new RegExp(`^S${letter}[A-Z2-7]{56}$`));

    const theirs = fromSeed(te.encode(kp.seed));
    expect(theirs.getPublicKey()).toBe(kp.publicKey);
    expect(new TextDecoder().decode(theirs.getSeed())).toBe(kp.seed);
    expect(keyPairFromSeed(kp.seed)).toEqual(kp);
  });

  it.each(ROLES)("%s signatures verify both ways against @nats-io/nkeys", (role) => {
    const kp = createKeyPair(role);
    const data = te.encode(`nonce-${role}-${Date.now()}`);
    const ours = signWithSeed(kp.seed, data);
    expect(ours).toHaveLength(64);
    expect(fromPublic(kp.publicKey).verify(data, ours)).toBe(true);

    const theirs = fromSeed(te.encode(kp.seed)).sign(data);
    expect(Buffer.from(theirs).equals(Buffer.from(ours))).toBe(true); // Ed25519 is deterministic
    expect(verifySignature(kp.publicKey, data, theirs)).toBe(true);
  });

  it("reads seeds minted by @nats-io/nkeys", () => {
    for (const theirs of [createOperator(), createAccount(), createUser()]) {
      const seed = new TextDecoder().decode(theirs.getSeed());
      const kp = keyPairFromSeed(seed);
      expect(kp.publicKey).toBe(theirs.getPublicKey());
      const data = te.encode("hello");
      expect(verifySignature(kp.publicKey, data, theirs.sign(data))).toBe(true);
      expect(theirs.verify(data, signWithSeed(seed, data))).toBe(true);
    }
  });

  it("verifySignature refuses the wrong data, key or signature shape", () => {
    const kp = createKeyPair("user");
    const other = createKeyPair("user");
    const data = te.encode("payload");
    const sig = signWithSeed(kp.seed, data);
    expect(verifySignature(kp.publicKey, data, sig)).toBe(true);
    expect(verifySignature(kp.publicKey, te.encode("payloaD"), sig)).toBe(false);
    expect(verifySignature(other.publicKey, data, sig)).toBe(false);
    expect(verifySignature(kp.publicKey, data, sig.subarray(0, 63))).toBe(false);
    expect(verifySignature(flipChar(kp.publicKey, 10), data, sig)).toBe(false);
    expect(verifySignature("not-a-key", data, sig)).toBe(false);
  });

  it("isPublicKey checks prefix, length and CRC", () => {
    const op = createKeyPair("operator");
    const acct = createKeyPair("account");
    expect(isPublicKey(op.publicKey)).toBe(true);
    expect(isPublicKey(op.publicKey, "operator")).toBe(true);
    expect(isPublicKey(op.publicKey, "account")).toBe(false);
    expect(isPublicKey(acct.publicKey, "account")).toBe(true);
    // every single-character corruption is caught by the CRC
    for (let i = 1; i < acct.publicKey.length; i++) expect(isPublicKey(flipChar(acct.publicKey, i))).toBe(false);
    expect(isPublicKey(acct.seed)).toBe(false);
    expect(isPublicKey(acct.publicKey.slice(0, -1))).toBe(false);
    expect(isPublicKey(`${acct.publicKey}A`)).toBe(false);
    expect(isPublicKey(acct.publicKey.toLowerCase())).toBe(false);
    expect(isPublicKey(createServer().getPublicKey())).toBe(false); // 'N' is not one of our roles
    expect(isPublicKey("")).toBe(false);
  });

  it("keyPairFromSeed refuses bad seeds without echoing them", () => {
    const kp = createKeyPair("account");
    const bad = [
      flipChar(kp.seed, 20), // CRC mismatch
      kp.seed.slice(0, -2),
      kp.publicKey, // a public key is not a seed
      new TextDecoder().decode(createServer().getSeed()), // SN...: valid nkey, not one of our roles
      "",
      "SAnotaseed",
    ];
    for (const seed of bad) {
      const err = expectCotalError(() => keyPairFromSeed(seed), "invalid-seed");
      if (seed !== "") expect(err.message).not.toContain(seed);
      expectCotalError(() => signWithSeed(seed, te.encode("x")), "invalid-seed");
    }
  });

  it("createKeyPair refuses unknown roles", () => {
    expectCotalError(() => createKeyPair("server" as KeyRole), "invalid-argument");
  });
});
