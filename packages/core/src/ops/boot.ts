import { type Guards } from "../guards.js";
import { CotalError, isCotalError } from "../errors.js";
import { startPrivateBroker } from "../broker/private-broker.js";
import { AuthorityStore, type VersionedRecord } from "../inventory/authority-store.js";
import { claimedSpaces, diffLists, seedRecord, type InventoryRecord, type PendingMutation } from "../inventory/record.js";
import { certainInventory, loadAuthorityAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { commitPending, type CasWrite } from "../saga/finish.js";
import { executeResume, recordProof } from "../saga/resume-executor.js";
import { leaseKeyFor } from "../verb/session.js";
import { withLease } from "../saga/lease-holder.js";
import { seedInventory } from "../saga/seed.js";

/** What a cold `up` boots, decided from the KV record read through a private broker. */
export type BootPlan =
  | { kind: "seed"; spaces: string[] }
  | { kind: "clean"; spaces: string[]; base: VersionedRecord }
  | { kind: "forward"; spaces: string[]; base: VersionedRecord; pending: PendingMutation }
  | { kind: "commit"; spaces: string[]; base: VersionedRecord; pending: PendingMutation };

function divergence(disk: string[], record: InventoryRecord): CotalError {
  const kv = record.spaces;
  const { diskOnly, kvOnly } = diffLists(disk, record);
  return new CotalError("divergence", `the tenant list on disk and the broker's inventory disagree:\n  disk: [${disk.join(", ")}]\n  kv:   [${kv.join(", ")}]\n  disk-only: [${diskOnly.join(", ")}]  kv-only: [${kvOnly.join(", ")}]\nBooting either list could evict a tenant, so nothing was started.`, {
    next: "cotal broker reconcile   # prints both lists and asks you to adopt one",
    details: { disk, kv, diskOnly, kvOnly },
  });
}

/**
 * Reads the inventory with no tenant able to connect (authority-only private broker), resolves
 * what the crash-resume table allows offline, and says what to boot. Disk is authoritative only
 * when no record exists yet.
 */
export async function planColdBoot(layout: RootLayout, onNotice: (m: string) => void, guards: Guards): Promise<BootPlan> {
  const disk = certainInventory(layout, guards).map((s) => s.name);
  const mb = await startPrivateBroker(layout, { storeDir: layout.storeDir, workDir: layout.runDir, spaces: [], label: "maintenance", guards });
  try {
    const store = await AuthorityStore.connect(mb.url, loadAuthorityAccount(layout), { name: "cotal up (maintenance)", guards });
    try {
      const read = await store.read();
      if (!read) return { kind: "seed", spaces: disk };
      return await withLease(store, leaseKeyFor(layout), "cotal up (cold boot)", async (): Promise<BootPlan> => {
        const out = await executeResume(read, { layout, guards, cas: (r, rev) => store.update(r, rev), onNotice });
        if (out.kind === "boot") return { kind: out.mode, spaces: claimedSpaces(out.base.record.spaces, out.pending), base: out.base, pending: out.pending };
        // Compared after any rollback: the rollback may have deleted the records its claim minted.
        const after = certainInventory(layout, guards).map((s) => s.name);
        const r = out.base.record;
        const diff = diffLists(after, r);
        if (diff.diskOnly.length + diff.kvOnly.length > 0) throw divergence(after, r);
        return { kind: "clean", spaces: r.spaces, base: out.base };
      });
    } finally {
      await store.close();
    }
  } finally {
    await mb.stop();
  }
}

/**
 * After the real broker reported ready on server.conf (its start is the proof that it loaded those
 * bytes): seed, re-prove, or finish the resumed mutation, fenced by the lease and the CAS.
 */
export async function finishColdBoot(layout: RootLayout, url: string, plan: BootPlan, digest: string, guards: Guards): Promise<InventoryRecord> {
  const store = await AuthorityStore.connect(url, loadAuthorityAccount(layout), { name: "cotal up", guards });
  try {
    return await withLease(store, leaseKeyFor(layout), "cotal up", async () => {
      if (plan.kind === "seed") {
        const rec = seedRecord(plan.spaces, digest, true);
        try {
          await seedInventory(store, rec, guards);
        } catch (err) {
          if (isCotalError(err, "conflict")) {
            throw new CotalError("conflict", "another process seeded this root's inventory first", { next: "cotal status", cause: err });
          }
          throw err;
        }
        return rec;
      }
      const cur = await store.read();
      if (!cur || cur.revision !== plan.base.revision) {
        throw new CotalError("conflict", "the inventory moved between the maintenance read and the boot", { next: "cotal status   # then cotal up again" });
      }
      const cas: CasWrite = (r, rev) => store.update(r, rev);
      if (plan.kind === "clean") {
        const r = plan.base.record;
        if (r.configDigest === digest) return r;
        const reproven: InventoryRecord = { ...r, appliedGeneration: r.generation, configDigest: digest };
        await cas(reproven, cur.revision);
        return reproven;
      }
      let base = cur;
      if (plan.kind === "forward") base = await recordProof(cas, base, plan.pending);
      return (await commitPending(layout, cas, base.record, base.revision, plan.pending, guards)).record;
    });
  } finally {
    await store.close();
  }
}
