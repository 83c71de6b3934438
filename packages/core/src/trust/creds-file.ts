import type { Authenticator, JwtAuth } from "@nats-io/transport-node";
import { CotalError } from "../errors.js";
import { keyPairFromSeed, signWithSeed } from "./nkeys.js";

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
  if (!jwt || !seed) throw new CotalError("invalid-argument", "unable to parse credentials (expected a JWT block and a seed block)");
  return { jwt, seed };
}

/**
 * The answer nats.js `credsAuthenticator` gives (jwt, public nkey, signature of the nonce), signed
 * with node's native Ed25519: the pure-JS path re-derives the key pair on every connect (~5 ms).
 */
export function nativeCredsAuthenticator(creds: string | Uint8Array): Authenticator {
  const text = typeof creds === "string" ? creds : new TextDecoder().decode(creds);
  const { jwt, seed } = parseCreds(text);
  const nkey = keyPairFromSeed(seed).publicKey;
  return (nonce?: string): JwtAuth => {
    const sig = nonce ? Buffer.from(signWithSeed(seed, new TextEncoder().encode(nonce))).toString("base64") : "";
    return { jwt, nkey, sig };
  };
}
