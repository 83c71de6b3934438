import { readdirSync } from "node:fs";
import { join } from "node:path";
import { SagaError } from "../errors.js";
import { templateStreamNames } from "../provision/template.js";

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

/**
 * 000 §2.3, multi-tenant form: partition the store's streams across the known accounts (tenants,
 * authority, system); refuse any stream in an account no tenant owns, and require the named space's
 * template streams to be present. Returns the named space's streams on disk.
 */
export function validateSpaceBackupInventory(storeDir: string, owners: Map<string, string>, space: string, accountKey: string): string[] {
  const found = storeStreams(storeDir);
  const orphans: string[] = [];
  for (const [acct, streams] of found) if (!owners.has(acct)) orphans.push(...streams.map((s) => `${acct}/${s}`));
  if (orphans.length > 0) {
    throw new SagaError("store-inventory", `the store holds streams no known tenant owns: ${orphans.join(", ")}; the tenant list is uncertain, so no backup was taken`, {
      exit: "cotal space list   # then restore the missing account record, or remove the orphan streams through a broker",
      details: { orphans },
    });
  }
  const mine = found.get(accountKey) ?? [];
  const missing = templateStreamNames(space).filter((n) => !mine.includes(n));
  if (missing.length > 0) {
    throw new SagaError("store-inventory", `space ${space} is missing template streams in the preserved store: ${missing.join(", ")}`, {
      exit: `cotal up   # re-provisions the space; then cotal down --preserve-state && cotal space backup ${space} --out <dir>`,
      details: { missing },
    });
  }
  return mine;
}
