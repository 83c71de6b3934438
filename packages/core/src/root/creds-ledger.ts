/**
 * The creds ledger of one space (docs/commands/space.md "space users"): one JSON line per cred
 * `space creds` (or `up`) minted, never its seed. Appended, not rewritten: two mints that run at
 * once (creds take no maintenance lock) each add their line with one O_APPEND write, so neither
 * loses the other's entry, where a read-modify-rename would. A torn last line is skipped on read.
 */
import { join } from "node:path";
import type { RootLayout } from "./layout.js";
import { ensureSecretDir, readTextIfExists, writeDurable } from "./secret-files.js";
import { decodeJwt } from "../trust/jwt.js";

/** A JWT permission block as signed into the user (`pub`/`sub`: allow and deny lists). */
export interface LedgerPermission {
  allow?: string[];
  deny?: string[];
}

export interface LedgerEntry {
  /** The user name given to `space creds --user` (the JWT's name is `<space>/<user>`). */
  user: string;
  publicKey: string;
  /** The JWT's `iat` (unix seconds) and the same instant as ISO 8601. */
  iat: number;
  issuedAt: string;
  /** Absent: the cred never expires. */
  expiresAt?: string;
  admin: boolean;
  permissions: { pub?: LedgerPermission; sub?: LedgerPermission };
  /** The creds file the mint wrote (absolute). */
  path: string;
}

/** The ledger's file: beside the space's creds, in its 0700 directory. */
export function credsLedgerFile(layout: RootLayout, space: string): string {
  return join(layout.spaceDir(space), "creds-ledger.jsonl");
}

/** Appends one entry (0600; the directory 0700), fsynced before the mint returns. */
export function appendLedgerEntry(layout: RootLayout, space: string, entry: LedgerEntry): void {
  ensureSecretDir(layout.spaceDir(space));
  writeDurable(credsLedgerFile(layout, space), `${JSON.stringify(entry)}\n`, undefined, "a");
}

function isEntry(v: unknown): v is LedgerEntry {
  const e = v as Partial<LedgerEntry> | null;
  return typeof e === "object" && e !== null && typeof e.user === "string" && typeof e.publicKey === "string" && typeof e.iat === "number" && typeof e.issuedAt === "string" && typeof e.path === "string" && typeof e.admin === "boolean";
}

/** Parses the ledger text: the entries in mint order, and how many lines could not be read. Pure. */
export function parseLedger(text: string | undefined): { entries: LedgerEntry[]; unreadable: number } {
  const entries: LedgerEntry[] = [];
  let unreadable = 0;
  for (const line of (text ?? "").split("\n")) {
    if (line.trim() === "") continue;
    try {
      const v: unknown = JSON.parse(line);
      if (isEntry(v)) entries.push(v);
      else unreadable++;
    } catch {
      unreadable++;
    }
  }
  return { entries, unreadable };
}

export function readLedger(layout: RootLayout, space: string): { entries: LedgerEntry[]; unreadable: number } {
  return parseLedger(readTextIfExists(credsLedgerFile(layout, space)));
}

/** What the ledger records of a cred, read from its (public) user JWT; `user` from the JWT's `<space>/<user>` name when not given. Pure. */
export function entryOfUserJwt(jwt: string, path: string, user?: string): LedgerEntry {
  const c = decodeJwt(jwt);
  const perm = (p: unknown): LedgerPermission | undefined => {
    const o = p as { allow?: unknown; deny?: unknown } | undefined;
    if (!o) return undefined;
    const list = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : undefined);
    const allow = list(o.allow);
    const deny = list(o.deny);
    return { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) };
  };
  const pub = perm(c.nats.pub);
  const sub = perm(c.nats.sub);
  // A default user is denied the stream-admin API (trust/permissions.ts spaceUserPermissions); an admin is denied nothing.
  const admin = (pub?.deny?.length ?? 0) === 0;
  return {
    user: user ?? c.name.slice(c.name.indexOf("/") + 1),
    publicKey: c.sub,
    iat: c.iat,
    issuedAt: new Date(c.iat * 1000).toISOString(),
    ...(c.exp !== undefined ? { expiresAt: new Date(c.exp * 1000).toISOString() } : {}),
    admin,
    permissions: { ...(pub ? { pub } : {}), ...(sub ? { sub } : {}) },
    path,
  };
}
