import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import type { LoadedBroker } from "../root/broker-store.js";
import { loadSpaceAccount, toAccountRecord } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir, readTextIfExists, writeFileAtomic, writeFilesAtomic } from "../root/secret-files.js";
import { ensureEvictorCreds } from "../broker/evict-connections.js";
import { createAccountTrust, decodeJwt, mintSystemUserCreds, observerPermissions, ownInboxPrefix, parseCreds, type AccountLimits, type UserCreds } from "../trust/index.js";

/**
 * A usable record for `space`: the existing one when it composes under this broker (forward-
 * idempotent re-runs), else undefined. A record signed by another operator is refused, never replaced.
 */
export function existingSpaceRecord(layout: RootLayout, broker: LoadedBroker, space: string): AccountRecord | undefined {
  const rec = loadSpaceAccount(layout, space);
  if (rec && rec.issuer !== broker.operator.publicKey) {
    throw new CotalError("foreign-operator", `space ${space} already has a record signed by operator ${rec.issuer}, not this broker's ${broker.operator.publicKey}`, {
      next: `move ${layout.accountFile(space)} aside if it is not a tenant of this broker, then re-run`,
      details: { space, issuer: rec.issuer },
    });
  }
  return rec;
}

/**
 * Step 4 for adds: mint in memory, then write every record atomically in one batch; existing
 * records are reused. The $SYS observer creds are local material, not trust: the verb writes them
 * after the commit (a crash before that is completed by re-running the add), off the critical path.
 */
export async function materialiseAdds(layout: RootLayout, broker: LoadedBroker, adds: readonly string[], limits?: AccountLimits): Promise<{ minted: string[]; reused: string[] }> {
  const reused: string[] = [];
  const fresh: AccountRecord[] = [];
  for (const space of adds) {
    const rec = existingSpaceRecord(layout, broker, space);
    if (rec) reused.push(space);
    else fresh.push(toAccountRecord(createAccountTrust(broker.operator, space, { kind: "space", ...(limits ? { limits } : {}) })));
  }
  await writeFilesAtomic(fresh.map((rec) => ({ path: layout.accountFile(rec.name), data: `${JSON.stringify(rec, null, 2)}\n` })));
  return { minted: fresh.map((r) => r.name), reused };
}

/** A fresh `$SYS` membership observer for one space (docs/lifecycle.md "Minted users": its own reply prefix, its own account only). */
export function mintObserverCreds(system: LoadedBroker["system"], rec: Pick<AccountRecord, "name" | "publicKey">, guards: Guards = GUARDS_ON): UserCreds {
  const { ownInbox, ...perms } = observerPermissions(rec.publicKey, guards);
  return mintSystemUserCreds(system, { name: `${rec.name}/observer`, ...perms, ownInbox });
}

/**
 * Whether an observer creds file already carries today's permissions for this account under this
 * system account. Roots minted before per-cred inboxes hold observers that may read `_INBOX.>`:
 * those are stale and get re-minted.
 */
export function observerIsCurrent(text: string, system: LoadedBroker["system"], rec: Pick<AccountRecord, "publicKey">, guards: Guards = GUARDS_ON): boolean {
  let claims;
  try {
    claims = decodeJwt(parseCreds(text).jwt);
  } catch {
    return false;
  }
  const { ownInbox, allowPub, allowSub } = observerPermissions(rec.publicKey, guards);
  const nats = claims.nats as { issuer_account?: unknown; pub?: { allow?: unknown; deny?: unknown }; sub?: { allow?: unknown; deny?: unknown } };
  const wantSub = [...(allowSub ?? []), ...(ownInbox ? [`${ownInboxPrefix(claims.sub)}.>`] : [])];
  return nats.issuer_account === system.publicKey && sameList(nats.pub?.allow, allowPub ?? []) && sameList(nats.sub?.allow, wantSub) && nats.pub?.deny === undefined && nats.sub?.deny === undefined;
}

function sameList(got: unknown, want: readonly string[]): boolean {
  return Array.isArray(got) && got.length === want.length && [...got].sort().join("\n") === [...want].sort().join("\n");
}

/** The $SYS observer creds file a space should have and does not (or has stale), or undefined. */
function observerCreds(layout: RootLayout, broker: LoadedBroker, rec: AccountRecord, guards: Guards): { path: string; data: string } | undefined {
  const path = layout.sysCredsFile(rec.name, "observer");
  if (!broker.system.signingSeed) return undefined;
  const existing = readTextIfExists(path);
  if (existing !== undefined && observerIsCurrent(existing, broker.system, rec, guards)) return undefined;
  return { path, data: mintObserverCreds(broker.system, rec, guards).creds };
}

/**
 * The space's $SYS membership observer: scoped to its own account's events, replies on its own
 * inbox. Minted (or re-minted when stale) only with the retained system signing seed; callers check
 * that before the claim so nothing half-happens. The broker's one connection evictor is $SYS
 * material of the same kind, so it is ensured here too.
 */
export function writeObserverCreds(layout: RootLayout, broker: LoadedBroker, space: string, guards: Guards = GUARDS_ON): void {
  ensureEvictorCreds(layout, broker);
  const rec = loadSpaceAccount(layout, space);
  const c = rec && observerCreds(layout, broker, rec, guards);
  if (!c) return;
  ensureSecretDir(layout.spaceDir(space));
  writeFileAtomic(c.path, c.data);
}

export function assertCanMintSysCreds(broker: LoadedBroker): void {
  if (!broker.system.signingSeed) {
    throw new CotalError("system-seed-absent", "this root was created with --single-space: it keeps no system signing seed, so a new space cannot get its $SYS observer creds", {
      next: "cotal down && cotal up --rotate-sys   # re-mints every tenant's $SYS creds and retains the seed from then on",
    });
  }
}
