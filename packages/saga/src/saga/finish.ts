import { rmSync } from "node:fs";
import { SagaError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { VersionedRecord } from "../inventory/authority-store.js";
import { accountedNames, type InventoryRecord, type PendingMutation } from "../inventory/record.js";
import type { RootLayout } from "../root/layout.js";
import { digestOfServerConf } from "./digest.js";
import { unmaterialiseAdds } from "./materialise.js";

/** A CAS write at a revision; the saga passes its own (which honours the test-only CAS switch). */
export type CasWrite = (record: InventoryRecord, revision: number) => Promise<number>;

/** Step 8: verify the running bytes are the ones proven, then commit generation g+1. */
export async function commitPending(layout: RootLayout, cas: CasWrite, record: InventoryRecord, revision: number, pending: PendingMutation): Promise<VersionedRecord> {
  const onDisk = digestOfServerConf(layout);
  if (onDisk !== record.configDigest) {
    throw new SagaError("digest-mismatch", `server.conf (${onDisk ?? "missing"}) is not the config proven at generation ${pending.generation} (${record.configDigest}); something outside the saga promoted a config`, {
      exit: "cotal broker reconcile",
      details: { onDisk, proven: record.configDigest, pending },
    });
  }
  // A space that is listed again is no longer excluded; a reconcile sets the exclusions it decided.
  const excluded = (pending.excluded ?? record.excluded ?? []).filter((n) => !pending.nextSpaces.includes(n));
  const committed: InventoryRecord = { generation: pending.generation, spaces: pending.nextSpaces, appliedGeneration: pending.generation, configDigest: record.configDigest, pending: null, ...(record.serverConfigDigest ? { serverConfigDigest: record.serverConfigDigest } : {}), ...(excluded.length > 0 ? { excluded } : {}) };
  const rev = await cas(committed, revision);
  await failpoint("after-commit");
  return { record: committed, revision: rev };
}

/** A claim that never reached the broker is undone: staged file, never-trusted records, pending. */
export async function rollbackUnpromoted(layout: RootLayout, cas: CasWrite, base: VersionedRecord, pending: PendingMutation): Promise<VersionedRecord> {
  rmSync(layout.stagedConf(pending.generation, pending.leaseId), { force: true });
  // A reconcile never creates, deletes or edits a record: its "adds" were already on disk.
  if (pending.op !== "reconcile") unmaterialiseAdds(layout, pending.adds, accountedNames(base.record));
  const cleared: InventoryRecord = { ...base.record, pending: null };
  return { record: cleared, revision: await cas(cleared, base.revision) };
}

export function describePending(p: PendingMutation): string {
  return `${p.op} ${[...p.adds.map((s) => `+${s}`), ...p.removes.map((s) => `-${s}`)].join(" ")} by ${p.writer} (generation ${p.generation})`;
}
