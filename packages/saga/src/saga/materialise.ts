import { existsSync } from "node:fs";
import { SagaError } from "../errors.js";
import type { LoadedBroker } from "../root/broker-store.js";
import { loadSpaceAccount, toAccountRecord } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir, writeFileAtomic, writeFilesAtomic } from "../root/secret-files.js";
import { createAccountTrust, mintSystemUserCreds, type AccountLimits } from "../trust/index.js";

/**
 * A usable record for `space`: the existing one when it composes under this broker (forward-
 * idempotent re-runs), else undefined. A record signed by another operator is refused, never replaced.
 */
export function existingSpaceRecord(layout: RootLayout, broker: LoadedBroker, space: string): AccountRecord | undefined {
  const rec = loadSpaceAccount(layout, space);
  if (rec && rec.issuer !== broker.operator.publicKey) {
    throw new SagaError("foreign-operator", `space ${space} already has a record signed by operator ${rec.issuer}, not this broker's ${broker.operator.publicKey}`, {
      exit: `move ${layout.accountFile(space)} aside if it is not a tenant of this broker, then re-run`,
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

/** The $SYS observer creds file a space should have and does not yet, or undefined. */
function observerCreds(layout: RootLayout, broker: LoadedBroker, rec: AccountRecord): { path: string; data: string } | undefined {
  const path = layout.sysCredsFile(rec.name, "observer");
  if (existsSync(path) || !broker.system.signingSeed) return undefined;
  const creds = mintSystemUserCreds(broker.system, {
    name: `${rec.name}/observer`,
    allowSub: [`$SYS.ACCOUNT.${rec.publicKey}.>`, "_INBOX.>"],
    allowPub: [`$SYS.REQ.ACCOUNT.${rec.publicKey}.>`],
  });
  return { path, data: creds.creds };
}

/**
 * The space's $SYS membership observer: scoped to its own account's events. Minted only with the
 * retained system signing seed; callers check that before the claim so nothing half-happens.
 */
export function writeObserverCreds(layout: RootLayout, broker: LoadedBroker, space: string): void {
  const rec = loadSpaceAccount(layout, space);
  const c = rec && observerCreds(layout, broker, rec);
  if (!c) return;
  ensureSecretDir(layout.spaceDir(space));
  writeFileAtomic(c.path, c.data);
}

export function assertCanMintSysCreds(broker: LoadedBroker): void {
  if (!broker.system.signingSeed) {
    throw new SagaError("system-seed-absent", "this root was created with --single-space: it keeps no system signing seed, so a new space cannot get its $SYS observer creds", {
      exit: "cotal down && cotal up --rotate-sys   # re-mints every tenant's $SYS creds and retains the seed from then on",
    });
  }
}
