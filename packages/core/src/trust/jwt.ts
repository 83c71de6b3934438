/**
 * NATS v2 JWTs (header `{"typ":"JWT","alg":"ed25519-nkey"}`), built like nats-io/jwt v2 but signed
 * natively. The jti is base32 (no padding) of SHA-512/256 over the claims JSON without a jti.
 */
import { createHash } from "node:crypto";
import { CotalError } from "../errors.js";
import { base32Encode, base64UrlDecode, base64UrlEncode } from "./codec.js";
import { isPublicKey, signWithSeed, signerFor, verifySignature } from "./nkeys.js";

export interface JwtClaims {
  jti: string;
  iat: number;
  iss: string;
  sub: string;
  name: string;
  exp?: number;
  nats: Record<string, unknown> & { type: string; version: 2 };
}

const ALGORITHM = "ed25519-nkey";
const HEADER_SEGMENT = base64UrlEncode(JSON.stringify({ typ: "JWT", alg: ALGORITHM }));

function invalidArgument(message: string): CotalError {
  return new CotalError("invalid-argument", message);
}

function invalidJwt(reason: string): CotalError {
  return new CotalError("invalid-jwt", `not a valid NATS v2 JWT: ${reason}`, { details: { reason } });
}

function isSeconds(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function signJwt(claims: Omit<JwtClaims, "jti" | "iat"> & { iat?: number }, signerSeed: string): string {
  const signer = signerFor(signerSeed);
  // A mismatched iss would mint a token no server accepts; catch it here rather than at connect time.
  if (claims.iss !== signer.publicKey) throw invalidArgument("JWT iss does not match the public key of the signing seed");
  if (!isPublicKey(claims.sub)) throw invalidArgument("JWT sub must be an operator, account or user public key");
  if (typeof claims.name !== "string") throw invalidArgument("JWT name must be a string");
  if (!isObject(claims.nats) || typeof claims.nats.type !== "string" || claims.nats.version !== 2) {
    throw invalidArgument("JWT nats claims need a type and version 2");
  }
  const iat = claims.iat ?? Math.floor(Date.now() / 1000);
  if (!isSeconds(iat)) throw invalidArgument("JWT iat must be whole seconds since the epoch");
  if (claims.exp !== undefined && (!isSeconds(claims.exp) || claims.exp <= iat)) {
    throw invalidArgument("JWT exp must be whole seconds after iat");
  }

  // Hash first without a jti (Go's jwt omits the empty one), then emit with jti in front.
  const { iss, name, sub, exp, nats } = claims;
  const body: Omit<JwtClaims, "jti"> = exp === undefined ? { iat, iss, name, sub, nats } : { iat, iss, name, sub, exp, nats };
  const jti = base32Encode(createHash("sha512-256").update(JSON.stringify(body)).digest());
  const signingInput = `${HEADER_SEGMENT}.${base64UrlEncode(JSON.stringify({ jti, ...body }))}`;
  const signature = signWithSeed(signerSeed, Buffer.from(signingInput, "utf8"));
  return `${signingInput}.${base64UrlEncode(signature)}`;
}

function splitToken(token: string): [string, string, string] {
  if (typeof token !== "string") throw invalidJwt("not a string");
  const parts = token.split(".");
  if (parts.length !== 3) throw invalidJwt(`expected 3 segments, found ${parts.length}`);
  return parts as [string, string, string];
}

function parseSegment(segment: string, what: string): unknown {
  const bytes = base64UrlDecode(segment);
  if (bytes === undefined || bytes.length === 0) throw invalidJwt(`${what} is not base64url`);
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    throw invalidJwt(`${what} is not JSON`);
  }
}

function claimsOf(header: unknown, payload: unknown): JwtClaims {
  if (!isObject(header) || typeof header.typ !== "string" || header.typ.toUpperCase() !== "JWT") {
    throw invalidJwt("header typ is not JWT");
  }
  if (header.alg !== ALGORITHM) throw invalidJwt(`header alg is not ${ALGORITHM}`);
  if (!isObject(payload)) throw invalidJwt("payload is not an object");
  const { jti, iat, iss, sub, name, exp, nats } = payload;
  if (typeof jti !== "string" || jti === "") throw invalidJwt("missing jti");
  if (!isSeconds(iat)) throw invalidJwt("missing or bad iat");
  if (typeof iss !== "string" || iss === "") throw invalidJwt("missing iss");
  if (typeof sub !== "string" || sub === "") throw invalidJwt("missing sub");
  // Go's jwt omits an empty name, so a missing one reads as "".
  if (name !== undefined && typeof name !== "string") throw invalidJwt("bad name");
  if (exp !== undefined && !isSeconds(exp)) throw invalidJwt("bad exp");
  if (!isObject(nats) || typeof nats.type !== "string") throw invalidJwt("missing nats.type");
  if (nats.version !== 2) throw invalidJwt("not a version 2 JWT");
  // The payload is this decode's own fresh object: default its name in place rather than copy it.
  if (name === undefined) payload.name = "";
  return payload as unknown as JwtClaims;
}

/**
 * Header segments that already passed the check: every token cotal mints has the same header, and a
 * verb decodes 10,000 of them, so the segment (a string, checked as a whole) is parsed once per process.
 */
const checkedHeaders = new Set<string>();

function claimsOfToken(header: string, payload: string): JwtClaims {
  if (checkedHeaders.has(header)) return claimsOf(CHECKED_HEADER, parseSegment(payload, "payload"));
  const claims = claimsOf(parseSegment(header, "header"), parseSegment(payload, "payload"));
  if (checkedHeaders.size < 16) checkedHeaders.add(header);
  return claims;
}
const CHECKED_HEADER = { typ: "JWT", alg: ALGORITHM };

/** Parses and shape-checks a token without checking its signature. */
export function decodeJwt(token: string): JwtClaims {
  const [header, payload] = splitToken(token);
  return claimsOfToken(header, payload);
}

/** {@link decodeJwt} plus the Ed25519 signature check against `iss` (no expiry or trust-chain checks). */
export function verifyJwt(token: string): JwtClaims {
  const [header, payload, signature] = splitToken(token);
  const claims = claimsOfToken(header, payload);
  if (!isPublicKey(claims.iss)) throw invalidJwt("iss is not a public nkey");
  const signatureBytes = base64UrlDecode(signature);
  if (signatureBytes === undefined) throw invalidJwt("signature is not base64url");
  if (!verifySignature(claims.iss, Buffer.from(`${header}.${payload}`, "utf8"), signatureBytes)) {
    throw invalidJwt("signature does not match iss");
  }
  return claims;
}
