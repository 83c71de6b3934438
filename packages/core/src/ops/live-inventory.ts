import { type Guards } from "../guards.js";
import { CotalError, isCotalError } from "../errors.js";
import { seedRecord } from "../inventory/record.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { preloadedAccounts } from "../render/preloaded-accounts.js";
import { certainInventory } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { digestOfServerConf } from "../saga/digest.js";
import { runMutation } from "../saga/mutation.js";
import { seedInventory } from "../saga/seed.js";
import { openLiveSession } from "../verb/session.js";

/**
 * `up` on a running root: seed the record if a pre-saga broker never had one, and resume an
 * interrupted mutation through the same saga. Returns notes for the operator; changes nothing when clean.
 */
export async function ensureLiveInventory(layout: RootLayout, lock: MaintenanceLock, progress: (m: string) => void, guards: Guards): Promise<string[]> {
  const notes: string[] = [];
  const session = await openLiveSession(layout, "up", { guards, onNotice: (m) => (notes.push(m), progress(m)) });
  try {
    const vr = await session.store.read();
    if (!vr) {
      const disk = certainInventory(layout, guards);
      const conf = readTextIfExists(layout.serverConf) ?? "";
      const preloaded = new Set(preloadedAccounts(conf));
      const missing = disk.filter((s) => !preloaded.has(s.publicKey)).map((s) => s.name);
      if (missing.length > 0) {
        throw new CotalError("divergence", `the running config does not preload ${missing.join(", ")}, which exist on disk; seeding the inventory from either would be a guess`, {
          next: "cotal broker reconcile",
        });
      }
      try {
        await seedInventory(session.store, seedRecord(disk.map((s) => s.name), digestOfServerConf(layout) ?? null, true), guards);
        notes.push(`seeded the inventory from disk: ${disk.map((s) => s.name).join(", ")}`);
      } catch (err) {
        if (!isCotalError(err, "conflict")) throw err; // someone else seeded it: fine, it exists now
      }
      return notes;
    }
    if (vr.record.pending || vr.record.appliedGeneration !== vr.record.generation) {
      const r = await runMutation(session.envWith(lock), { op: "resume", verb: "up (resume)" });
      notes.push(`resumed: ${r.resumed ?? "nothing"}; generation ${r.generation}`);
    }
    return notes;
  } finally {
    await session.close();
  }
}
