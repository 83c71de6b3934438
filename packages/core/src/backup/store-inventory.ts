import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CotalError } from "../errors.js";
import { templateStreamNames } from "../provision/template.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** Streams on disk per account directory of a JetStream store (<store>/jetstream/<account>/streams/<name>). */
export function storeStreams(storeDir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const js = join(storeDir, "jetstream");
  for (const acct of list(js)) {
    const streams = list(join(js, acct, "streams"));
    if (streams.length > 0) out.set(acct, streams.sort());
  }
  return out;
}

/** Account key → owner name for every account a store may hold streams of: tenants, authority, $SYS. */
export function storeOwners(layout: RootLayout, tenants: readonly AccountRecord[]): Map<string, string> {
  return new Map<string, string>([
    [loadBrokerTrust(layout).system.publicKey, "$SYS"],
    [loadAuthorityAccount(layout).publicKey, "authority"],
    ...tenants.map((t) => [t.publicKey, t.name] as [string, string]),
  ]);
}

/** Streams in accounts no owner vouches for, per account directory. */
export function orphanStreams(storeDir: string, owners: Map<string, string>): { account: string; streams: string[] }[] {
  return [...storeStreams(storeDir)].filter(([acct]) => !owners.has(acct)).map(([account, streams]) => ({ account, streams }));
}

/**
 * docs/lifecycle.md "Backup and restore", multi-tenant form: partition the store's streams across the known accounts (tenants,
 * authority, system); refuse any stream in an account no tenant owns, and require the named space's
 * template streams to be present. Returns the named space's streams on disk.
 */
export function validateSpaceBackupInventory(storeDir: string, owners: Map<string, string>, space: string, accountKey: string): string[] {
  const found = storeStreams(storeDir);
  const orphans = orphanStreams(storeDir, owners).flatMap((o) => o.streams.map((s) => `${o.account}/${s}`));
  if (orphans.length > 0) {
    throw new CotalError("store-inventory", `the store holds streams no known tenant owns: ${orphans.join(", ")}; the tenant list is uncertain, so no backup was taken`, {
      next: "cotal clean orphan-streams   # lists them; restore the account record from a backup instead if one is a tenant",
      details: { orphans },
    });
  }
  const mine = found.get(accountKey) ?? [];
  const missing = templateStreamNames(space).filter((n) => !mine.includes(n));
  if (missing.length > 0) {
    throw new CotalError("store-inventory", `space ${space} is missing template streams in the preserved store: ${missing.join(", ")}`, {
      next: `cotal up   # re-provisions the space; then cotal down --preserve-state && cotal space backup ${space} --out <dir>`,
      details: { missing },
    });
  }
  return mine;
}
