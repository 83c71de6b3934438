/**
 * `cotal space users <space>`: every cred of a space the root knows of (docs/commands/space.md
 * "space users"): the ledger's entries, and any creds file under the space's directory the ledger
 * does not name (minted before the ledger), each with its state read from the account JWT's
 * revocations. Read-only; no broker needed.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { entryOfUserJwt, readLedger, type LedgerEntry } from "../root/creds-ledger.js";
import { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { decodeJwt, parseCreds } from "../trust/index.js";
import { isRevoked, userRevocations } from "../trust/user-revocations.js";

export type SpaceUserState = "active" | "revoked" | "expired";

export interface SpaceUserRow extends LedgerEntry {
  state: SpaceUserState;
  /** Where the row comes from: the ledger, or a creds file the ledger does not name. */
  source: "ledger" | "unknown (minted before the ledger)";
  /** The revocation time (ISO) that refuses this cred, when revoked. */
  revokedAt?: string;
  /** Whether `path` still holds this cred (a later mint of the same user replaces the file). */
  onDisk: boolean;
}

export interface SpaceUsersReport {
  space: string;
  users: SpaceUserRow[];
  /** Ledger lines that could not be read (a torn write). */
  unreadable: number;
}

/** The public key of the cred in a creds file, or undefined when it is not a readable creds file. */
function keyInFile(path: string): { key: string; jwt: string } | undefined {
  try {
    const text = readTextIfExists(path);
    if (text === undefined) return undefined;
    const { jwt } = parseCreds(text);
    return { key: decodeJwt(jwt).sub, jwt };
  } catch {
    return undefined;
  }
}

/** The user creds files under the space's directory (`users/*.creds`: up's and space creds' default place). */
function credsOnDisk(layout: RootLayout, space: string): string[] {
  const dir = join(layout.spaceDir(space), "users");
  try {
    return readdirSync(dir).filter((f) => f.endsWith(".creds")).sort().map((f) => join(dir, f));
  } catch {
    return [];
  }
}

/** Every known cred of `space` with its state, the ledger's in mint order, then the unknown ones. */
export function spaceUsers(root: string, name: string, guards: Guards = GUARDS_ON, now = Date.now()): SpaceUsersReport {
  const space = assertSpaceName(name, guards);
  const layout = new RootLayout(canonicalRoot(root));
  const rec = loadSpaceAccount(layout, space);
  if (!rec) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}`, { next: "cotal space list" });
  const revocations = userRevocations(rec.jwt);
  const { entries, unreadable } = readLedger(layout, space);
  const known = new Set(entries.map((e) => e.publicKey));
  const unknown = credsOnDisk(layout, space).flatMap((path) => {
    const found = keyInFile(path);
    return found && !known.has(found.key) ? [{ entry: entryOfUserJwt(found.jwt, path), source: "unknown (minted before the ledger)" as const }] : [];
  });
  const rows = [...entries.map((entry) => ({ entry, source: "ledger" as const })), ...unknown].map(({ entry, source }): SpaceUserRow => {
    const revokedAt = isRevoked(revocations, entry.publicKey, entry.iat) ? new Date((revocations[entry.publicKey] as number) * 1000).toISOString() : undefined;
    const expired = entry.expiresAt !== undefined && Date.parse(entry.expiresAt) <= now;
    const state: SpaceUserState = revokedAt ? "revoked" : expired ? "expired" : "active";
    return { ...entry, state, source, ...(revokedAt ? { revokedAt } : {}), onDisk: keyInFile(entry.path)?.key === entry.publicKey };
  });
  return { space, users: rows, unreadable };
}

/** The count line of `space info`: "3 creds: 2 active, 1 revoked (1 unknown)". Pure. */
export function usersSummary(r: Pick<SpaceUsersReport, "users">): string {
  const by = (s: SpaceUserState) => r.users.filter((u) => u.state === s).length;
  const unknown = r.users.filter((u) => u.source !== "ledger").length;
  return `${r.users.length} cred(s): ${by("active")} active, ${by("revoked")} revoked, ${by("expired")} expired${unknown > 0 ? ` (${unknown} minted before the ledger)` : ""}`;
}
