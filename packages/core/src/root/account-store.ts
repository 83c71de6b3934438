import { GUARDS_ON, type Guards } from "../guards.js";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RERUN, CotalError } from "../errors.js";
import type { AccountTrust } from "../trust/index.js";
import { spaceFromHex } from "../names.js";
import type { RootLayout } from "./layout.js";
import { ACCOUNT_FORMAT, parseAccountRecord, reparseCheckedAccountRecord, type AccountRecord } from "./records.js";
import { recordDigest, saveValidatedDigests, validatedDigests } from "./record-index.js";
import { readTextIfExists, writeJsonAtomic } from "./secret-files.js";

/**
 * Validating a record derives its signing key from the seed (~0.2 ms cold); one verb reads the same
 * records more than once (checks, then the render), so parsed records are remembered by content, and
 * across processes the root's index of checked bytes (record-index.ts) spares the unchanged ones.
 */
const parsed = new Map<string, AccountRecord>();
function parseRemembered(layout: RootLayout, text: string, expect: { kind: "space" | "authority"; name?: string }, seen?: Set<string>): AccountRecord | string {
  // Keyed by the digest the index uses (kind, name and bytes): one sha256, not a 2 KB string key per lookup.
  const digest = recordDigest(expect.kind, expect.name ?? "", text);
  const hit = parsed.get(digest);
  if (hit) {
    seen?.add(digest);
    return hit;
  }
  const rec = validatedDigests(layout).has(digest) ? reparseCheckedAccountRecord(text) : parseAccountRecord(text, expect);
  if (typeof rec !== "string") {
    if (parsed.size >= 50_000) parsed.clear();
    parsed.set(digest, rec);
    seen?.add(digest);
  }
  return rec;
}

/** Test-only: forget every parsed record, as a fresh process would. */
export function forgetParsedRecords(): void {
  parsed.clear();
}

export interface CorruptRecord {
  path: string;
  reason: string;
}

/** The validated tenant list on disk. `corrupt` non-empty means the tenant count is unknown. */
export interface AccountInventory {
  spaces: AccountRecord[];
  corrupt: CorruptRecord[];
}

export function toAccountRecord(trust: AccountTrust): AccountRecord {
  return {
    format: ACCOUNT_FORMAT,
    kind: trust.kind,
    name: trust.name,
    publicKey: trust.publicKey,
    jwt: trust.jwt,
    signingKey: trust.signingKey,
    signingSeed: trust.signingSeed,
    issuer: trust.issuer,
    limits: trust.limits,
    createdAt: trust.createdAt,
  };
}

export function saveSpaceAccount(layout: RootLayout, rec: AccountRecord): void {
  if (rec.kind !== "space") throw new CotalError("invalid-argument", "saveSpaceAccount takes a space account");
  writeJsonAtomic(layout.accountFile(rec.name), rec);
}

/** Deletes one tenant's account record and nothing else. */
export function deleteSpaceAccount(layout: RootLayout, space: string): void {
  rmSync(layout.accountFile(space), { force: true });
}

export function saveAuthorityAccount(layout: RootLayout, rec: AccountRecord): void {
  if (rec.kind !== "authority") throw new CotalError("invalid-argument", "saveAuthorityAccount takes the authority account");
  writeJsonAtomic(layout.authorityFile, rec);
}

export function loadAuthorityAccount(layout: RootLayout): AccountRecord {
  const text = readTextIfExists(layout.authorityFile);
  if (text === undefined) {
    throw new CotalError("missing-broker-trust", `no broker-authority account at ${layout.authorityFile}`, {
      next: "restore the root's auth/ directory from a backup",
    });
  }
  const rec = parseRemembered(layout, text, { kind: "authority" });
  if (typeof rec === "string") {
    throw new CotalError("corrupt-record", `${layout.authorityFile} is unusable: ${rec}`, {
      next: `restore ${layout.authorityFile} from a backup`,
      details: { corrupt: [{ path: layout.authorityFile, reason: rec }] },
    });
  }
  return rec;
}

/** Reads one tenant's record: undefined when absent, CotalError("corrupt-record") when unusable. */
export function loadSpaceAccount(layout: RootLayout, space: string): AccountRecord | undefined {
  const path = layout.accountFile(space);
  const text = readTextIfExists(path);
  if (text === undefined) return undefined;
  const rec = parseRemembered(layout, text, { kind: "space", name: space });
  if (typeof rec === "string") throw corruptError([{ path, reason: rec }]);
  return rec;
}

const ACCOUNT_FILE = /^account\.([0-9a-f]+)\.json$/;

/** Scans auth/account.*.json; never throws on one bad file, it reports it in `corrupt` instead. */
export function accountInventory(layout: RootLayout): AccountInventory {
  let names: string[];
  try {
    names = readdirSync(layout.authDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { spaces: [], corrupt: [] };
    return { spaces: [], corrupt: [{ path: layout.authDir, reason: `unreadable directory (${(err as Error).message})` }] };
  }
  const spaces: AccountRecord[] = [];
  const corrupt: CorruptRecord[] = [];
  const checked = new Set<string>();
  for (const file of names.sort()) {
    if (!file.startsWith("account.")) continue;
    const path = join(layout.authDir, file);
    const m = ACCOUNT_FILE.exec(file);
    const name = m?.[1] ? spaceFromHex(m[1]) : undefined;
    if (name === undefined) {
      corrupt.push({ path, reason: "file name is not account.<hex(space)>.json" });
      continue;
    }
    let text: string | undefined;
    try {
      text = readTextIfExists(path);
    } catch (err) {
      corrupt.push({ path, reason: `unreadable (${(err as Error).message})` });
      continue;
    }
    if (text === undefined) continue; // removed between readdir and read: not a tenant any more
    const rec = parseRemembered(layout, text, { kind: "space", name }, checked);
    if (typeof rec === "string") corrupt.push({ path, reason: rec });
    else spaces.push(rec);
  }
  // A whole scan: the index becomes exactly the bytes that passed, so removed tenants drop out.
  saveValidatedDigests(layout, checked);
  spaces.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { spaces, corrupt };
}

export function corruptError(corrupt: CorruptRecord[]): CotalError {
  const list = corrupt.map((c) => `  ${c.path}: ${c.reason}`).join("\n");
  return new CotalError(
    "corrupt-record",
    `the tenant list is uncertain; ${corrupt.length} unreadable record(s):\n${list}\nAn unreadable record may be a live tenant, so nothing is rendered.`,
    {
      next: `repair or move aside ${corrupt.map((c) => c.path).join(" ")}, then: ${RERUN}`,
      details: { corrupt },
    },
  );
}

/** The inventory, or a refusal when any record is unreadable (fail closed on uncertainty). */
export function certainInventory(layout: RootLayout, guards: Guards = GUARDS_ON): AccountRecord[] {
  const inv = accountInventory(layout);
  if (inv.corrupt.length > 0 && !guards.IGNORE_CORRUPT) throw corruptError(inv.corrupt);
  return inv.spaces;
}
