import { GUARDS_ON, type Guards } from "../guards.js";
import { accessSync, constants, existsSync, statSync, type Stats } from "node:fs";
import { rerunWith, CotalError } from "../errors.js";
import { assertSpaceName, isValidSpaceName, SPACE_NAME_RULE } from "../names.js";
import { mintUserCreds, spaceUserPermissions, type SpaceUserRole } from "../trust/index.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { assertJournalAllows } from "../journal/journal.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir, writeFileAtomic } from "../root/secret-files.js";
import { dirname, resolve } from "node:path";
import { appendLedgerEntry, entryOfUserJwt } from "../root/creds-ledger.js";

export interface CredsOptions {
  root: string;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
  space: string;
  user?: string;
  /** Full JetStream API of the account (create/update/delete streams); default users cannot reconfigure. */
  admin?: boolean;
  allowPub?: string[];
  allowSub?: string[];
  expiresInSeconds?: number;
  out?: string;
  /** Where the no-expiry warning goes (the CLI: a stderr line); the mint itself never fails on it. */
  onNotice?: (message: string) => void;
}

export interface CredsResult {
  space: string;
  user: string;
  role: SpaceUserRole;
  publicKey: string;
  path: string;
  expiresAt?: string;
}

function assertUserName(user: string): string {
  if (!isValidSpaceName(user)) {
    throw new CotalError("invalid-argument", `invalid user name ${JSON.stringify(user)}: a user name is ${SPACE_NAME_RULE}`, { next: "cotal space creds --help   # the user name rule and an example" });
  }
  return user;
}

const SUBJECT = /^[^\s]+$/;

function statOrAbsent(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

/**
 * `--out` checked before anything is minted or written (issue #28): not a directory, and its nearest
 * existing ancestor a writable directory (`--out /etc/passwd/x` was an `internal` mkdir failure).
 */
function assertOutPath(out: string, guards: Guards): string {
  const path = resolve(out);
  if (guards.CREDS_OUT_UNCHECKED) return path;
  const refuse = (message: string, errno: string, at: string): never => {
    throw new CotalError("io", message, { next: `${rerunWith({ "--out": null })}   # the creds go under the root; or --out a file in a directory you can write`, details: { path, errno, at } });
  };
  if (statOrAbsent(path)?.isDirectory()) refuse(`--out ${path} is a directory; it names the creds file to write`, "EISDIR", path);
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const st = statOrAbsent(dir);
    if (st && !st.isDirectory()) refuse(`--out ${path}: ${dir} is not a directory`, "ENOTDIR", dir);
    if (st) {
      try {
        accessSync(dir, constants.W_OK | constants.X_OK);
      } catch {
        refuse(`--out ${path}: ${dir} is not writable by this user`, "EACCES", dir);
      }
      return path;
    }
    if (dirname(dir) === dir) return path;
  }
}

/**
 * Writes a user creds file for `account`, only when absent: up's convenience cred, which it prints
 * for the operator who owns the root, so it is an admin (full JetStream API of the space).
 */
export function ensureUserCreds(layout: RootLayout, account: AccountRecord, user: string): string {
  const path = layout.userCredsFile(account.name, user);
  if (!existsSync(path)) {
    ensureSecretDir(layout.spaceDir(account.name));
    const minted = mintUserCreds(account, { name: `${account.name}/${user}`, ...spaceUserPermissions("admin", GUARDS_ON) }); // an admin has no guard to switch off
    appendLedgerEntry(layout, account.name, { ...entryOfUserJwt(minted.jwt, path, user), admin: true });
    writeFileAtomic(path, minted.creds);
  }
  return path;
}

/**
 * Mints a user of one space, signed by that space's signing key: it connects only to that space. A
 * default user may use the space's streams and buckets but not create, delete or reconfigure them
 * (docs/lifecycle.md "Minted users"); `admin` gets the account's full JetStream API. The default file names differ
 * (`user` / `admin`), so minting a default cred never replaces the admin cred `up` printed.
 */
export function mintSpaceCreds(opts: CredsOptions): CredsResult {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const role: SpaceUserRole = opts.admin === true ? "admin" : "user";
  const user = assertUserName(opts.user ?? role);
  for (const s of [...(opts.allowPub ?? []), ...(opts.allowSub ?? [])]) {
    if (!SUBJECT.test(s)) throw new CotalError("invalid-argument", `invalid subject ${JSON.stringify(s)}`, { next: "cotal space creds --help   # the subject forms --allow-pub and --allow-sub take" });
  }
  if (opts.expiresInSeconds !== undefined && !(opts.expiresInSeconds > 0)) {
    throw new CotalError("invalid-argument", "--expires must be a positive duration", { next: "cotal space creds --help   # the duration forms --expires takes" });
  }
  const out = opts.out === undefined ? undefined : assertOutPath(opts.out, guards);
  const layout = new RootLayout(opts.root);
  // Minting trust for a tenant mid-removal would hand out creds for a space that is going away.
  assertJournalAllows(layout, { verb: "space creds" }, guards);
  const broker = loadBrokerTrust(layout);
  const account = loadSpaceAccount(layout, space);
  if (!account) {
    throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}`, { next: "cotal space list" });
  }
  if (account.issuer !== broker.operator.publicKey) {
    throw new CotalError("foreign-operator", `space ${space} is signed by operator ${account.issuer}, not this broker's ${broker.operator.publicKey}`, {
      next: `move ${layout.accountFile(space)} aside; it belongs to another broker`,
    });
  }
  const minted = mintUserCreds(account, {
    name: `${space}/${user}`,
    ...spaceUserPermissions(role, guards),
    ...(opts.allowPub ? { allowPub: opts.allowPub } : {}),
    ...(opts.allowSub ? { allowSub: opts.allowSub } : {}),
    ...(opts.expiresInSeconds ? { expiresInSeconds: opts.expiresInSeconds } : {}),
  });
  const path = out ?? layout.userCredsFile(space, user);
  if (!out) ensureSecretDir(layout.spaceDir(space));
  // The ledger line goes first: a crash between the two leaves a line for a file never written (harmless),
  // never a cred (an --out file outside the root) that no one knows of.
  appendLedgerEntry(layout, space, { ...entryOfUserJwt(minted.jwt, path, user), admin: role === "admin" });
  writeFileAtomic(path, minted.creds);
  if (!minted.expiresAt) opts.onNotice?.(`the cred of ${user} never expires: revoking it (cotal space revoke ${space} --user ${user}) is the only way to take it back; --expires 30d bounds it`);
  return { space, user, role, publicKey: minted.publicKey, path, ...(minted.expiresAt ? { expiresAt: minted.expiresAt } : {}) };
}
