import type { AccountKind, AccountTrust } from "../trust/index.js";
import { decodeJwt, keyPairFromSeed, revokeAllBefore, revokeAllBeforeOf } from "../trust/index.js";
import { limitsOfClaims, sameLimits } from "../trust/limits.js";
import { isValidSpaceName } from "../names.js";

export const BROKER_FORMAT = "cotal.broker/1";
export const ACCOUNT_FORMAT = "cotal.account/1";

/** broker.json: public material only; seeds live in broker.secrets/. */
export interface BrokerRecord {
  format: typeof BROKER_FORMAT;
  operator: { publicKey: string; jwt: string };
  system: { publicKey: string; jwt: string; signingKey: string };
  generation: number;
  multiSpace: boolean;
  createdAt: string;
}

/** account.<hex>.json and authority.json. The account's identity seed is never kept: the operator re-signs. */
export interface AccountRecord extends AccountTrust {
  format: typeof ACCOUNT_FORMAT;
}

/** Public view of an account record: everything but the signing seed (safe for --json and logs). */
export type AccountSummary = Omit<AccountRecord, "signingSeed" | "jwt" | "format">;

export function summarizeAccount(rec: AccountRecord): AccountSummary {
  const { signingSeed: _s, jwt: _j, format: _f, ...rest } = rec;
  return rest;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): v is string {
  return typeof v === "string" && v.length > 0;
}

/**
 * Parses and cross-checks one account record; returns the reason it is unusable, or the record.
 * "Round-trips" means: the JWT names this key and this name, the issuer matches, and the signing seed
 * derives the signing key the JWT lists.
 */
export function parseAccountRecord(text: string, expect: { kind: AccountKind; name?: string }): AccountRecord | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  if (!isObject(raw)) return "not a JSON object";
  if (raw.format !== ACCOUNT_FORMAT) return `unknown format ${JSON.stringify(raw.format)}`;
  if (raw.kind !== expect.kind) return `kind ${JSON.stringify(raw.kind)}, expected ${expect.kind}`;
  for (const f of ["name", "publicKey", "jwt", "signingKey", "signingSeed", "issuer", "createdAt"] as const) {
    if (!str(raw[f])) return `field ${f} missing or empty`;
  }
  const rec = raw as unknown as AccountRecord;
  if (expect.kind === "space" && !isValidSpaceName(rec.name)) return `invalid space name ${JSON.stringify(rec.name)}`;
  if (expect.name !== undefined && rec.name !== expect.name) return `names ${JSON.stringify(rec.name)}, file is for ${JSON.stringify(expect.name)}`;
  let claims;
  try {
    claims = decodeJwt(rec.jwt);
  } catch (err) {
    return `account JWT does not decode (${(err as Error).message})`;
  }
  if (claims.sub !== rec.publicKey) return "account JWT subject differs from publicKey";
  if (claims.iss !== rec.issuer) return "account JWT issuer differs from issuer";
  if (claims.nats.type !== "account") return `JWT type ${String(claims.nats.type)}, expected account`;
  const signingKeys = claims.nats.signing_keys;
  if (!Array.isArray(signingKeys) || !signingKeys.some((k) => k === rec.signingKey || (isObject(k) && k.key === rec.signingKey))) {
    return "signing key is not listed in the account JWT";
  }
  try {
    if (keyPairFromSeed(rec.signingSeed).publicKey !== rec.signingKey) return "signing seed does not derive signingKey";
  } catch {
    return "signing seed does not decode";
  }
  // The JWT is what the server enforces; a record written before quotas carries no copy.
  const signed = limitsOfClaims(claims.nats);
  if (raw.limits !== undefined && (!isObject(raw.limits) || !sameLimits(raw.limits, signed))) return "limits differ from the ones signed into the account JWT";
  return withSigned({ ...rec, limits: signed }, claims.nats);
}

/**
 * What a record's JWT says beyond its limits, kept beside the parsed record (never in its bytes) so a
 * verb decodes each account JWT once: the parse decodes it, later readers (status's quiesce list) ask here.
 */
const signedRevocation = new WeakMap<AccountRecord, number | null>();

function withSigned(rec: AccountRecord, nats: Record<string, unknown>): AccountRecord {
  signedRevocation.set(rec, revokeAllBeforeOf(nats) ?? null);
  return rec;
}

/** The record's `revocations["*"]` (quiesced when set): from its parse, else decoded now (throws on a bad JWT). */
export function recordRevokeAllBefore(rec: AccountRecord): number | undefined {
  const known = signedRevocation.get(rec);
  if (known !== undefined) return known ?? undefined;
  return revokeAllBefore(rec.jwt);
}

/**
 * The record of bytes that already passed {@link parseAccountRecord} (root/record-index.ts): the
 * check is pure, so only the parse and the signed limits are redone, not the seed derivation.
 */
export function reparseCheckedAccountRecord(text: string): AccountRecord {
  // The parse's own object takes the signed limits: no copy per record (10,000 per verb).
  const rec = JSON.parse(text) as AccountRecord;
  const nats = decodeJwt(rec.jwt).nats;
  rec.limits = limitsOfClaims(nats);
  return withSigned(rec, nats);
}

export function parseBrokerRecord(text: string): BrokerRecord | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  if (!isObject(raw) || raw.format !== BROKER_FORMAT) return "not a cotal broker record";
  const op = raw.operator;
  const sys = raw.system;
  if (!isObject(op) || !str(op.publicKey) || !str(op.jwt)) return "operator material missing";
  if (!isObject(sys) || !str(sys.publicKey) || !str(sys.jwt) || !str(sys.signingKey)) return "system account material missing";
  if (typeof raw.generation !== "number" || typeof raw.multiSpace !== "boolean") return "generation or multiSpace missing";
  const rec = raw as unknown as BrokerRecord;
  try {
    const opc = decodeJwt(rec.operator.jwt);
    if (opc.sub !== rec.operator.publicKey || opc.iss !== rec.operator.publicKey) return "operator JWT does not name the operator key";
    if (opc.nats.system_account !== rec.system.publicKey) return "operator JWT names another system account";
    const sysc = decodeJwt(rec.system.jwt);
    if (sysc.sub !== rec.system.publicKey || sysc.iss !== rec.operator.publicKey) return "system account JWT not issued by the operator";
  } catch (err) {
    return `JWT does not decode (${(err as Error).message})`;
  }
  return rec;
}
