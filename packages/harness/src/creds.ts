import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import { fromSeed } from "@nats-io/nkeys";
import type { Authenticator, JwtAuth } from "@nats-io/transport-node";
import { HarnessError } from "./errors.js";

export interface ParsedCreds {
  jwt: string;
  /** The "SU..." user seed. */
  seed: string;
}

/** Splits a creds file the way nats.js does: the first two `---- ... ----` delimited blocks. */
export function parseCreds(text: string): ParsedCreds {
  const block = /\s*(?:(?:[-]{3,}[^\n]*[-]{3,}\n)(.+)(?:\n\s*[-]{3,}[^\n]*[-]{3,}\n))/gi;
  const jwt = block.exec(text)?.[1]?.trim();
  const seed = block.exec(text)?.[1]?.trim();
  if (!jwt || !seed) throw new HarnessError("invalid-argument", "unable to parse credentials (expected a JWT block and a seed block)");
  return { jwt, seed };
}

const B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32Decode(s: string): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let acc = 0;
  for (const ch of s) {
    const v = B32.indexOf(ch);
    if (v < 0) throw new HarnessError("invalid-argument", "seed is not base32");
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return Uint8Array.from(out);
}

// PKCS#8 wrapping of a raw 32-byte Ed25519 seed (RFC 8410), so node's crypto can sign with it.
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

function ed25519Key(seed: string): KeyObject {
  // An nkey seed is 2 prefix bytes, the 32-byte Ed25519 seed, then a CRC16.
  const raw = base32Decode(seed);
  if (raw.length !== 36) throw new HarnessError("invalid-argument", "seed has the wrong length");
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, raw.subarray(2, 34)]), format: "der", type: "pkcs8" });
}

/**
 * The same answer as nats.js `credsAuthenticator` (jwt, public nkey, base64 signature of the
 * nonce), computed with node's native Ed25519 instead of re-deriving the key pair in pure JS on
 * every connect: that re-derivation costs ~5 ms of CPU per handshake and would cap a poller at
 * ~200 attempts/s. The creds are parsed once.
 */
export function nativeCredsAuthenticator(creds: string | Uint8Array): Authenticator {
  const text = typeof creds === "string" ? creds : new TextDecoder().decode(creds);
  const { jwt, seed } = parseCreds(text);
  const nkey = fromSeed(new TextEncoder().encode(seed)).getPublicKey();
  const key = ed25519Key(seed);
  return (nonce?: string): JwtAuth => {
    const sig = nonce ? sign(null, Buffer.from(nonce, "utf8"), key).toString("base64") : "";
    return { jwt, nkey, sig };
  };
}
