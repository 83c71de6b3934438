import { GUARDS_ON, type Guards } from "../guards.js";
import { mayLeaveNodesBehind } from "./partial-proofs.js";
import { readFileSync, rmSync } from "node:fs";
import { RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { VersionedRecord } from "../inventory/inventory-store.js";
import { accountedNames, claimedSpaces, clusterFields, type InventoryRecord, type PendingMutation } from "../inventory/record.js";
import type { RootLayout } from "../root/layout.js";
import { digestOfServerConf } from "./digest.js";
import { preloadedAccounts } from "../render/preloaded-accounts.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { restoreLimitsChange } from "./limits-record.js";

/** A CAS write at a revision; the saga passes its own (which honours the test-only CAS switch). */
export type CasWrite = (record: InventoryRecord, revision: number) => Promise<number>;

/** Step 8: verify the running bytes are the ones proven, then commit generation g+1. */
export async function commitPending(layout: RootLayout, cas: CasWrite, record: InventoryRecord, revision: number, pending: PendingMutation, guards: Guards): Promise<VersionedRecord> {
  const onDisk = digestOfServerConf(layout);
  if (onDisk !== record.configDigest && !guards.SKIP_COMMIT_DIGEST) {
    throw new CotalError("digest-mismatch", `server.conf (${onDisk ?? "missing"}) is not the config proven at generation ${pending.generation} (${record.configDigest}); something outside the saga promoted a config`, {
      next: "cotal broker reconcile",
      details: { onDisk, proven: record.configDigest, pending },
    });
  }
  assertMembersProven(record, pending.generation, guards, pending);
  // A space that is listed again is no longer excluded; a reconcile sets the exclusions it decided.
  const spaces = claimedSpaces(record.spaces, pending);
  const listed = new Set(spaces);
  const excluded = (pending.excluded ?? record.excluded ?? []).filter((n) => !listed.has(n));
  const committed: InventoryRecord = { generation: pending.generation, spaces, appliedGeneration: pending.generation, configDigest: record.configDigest, pending: null, ...(record.serverConfigDigest ? { serverConfigDigest: record.serverConfigDigest } : {}), ...(excluded.length > 0 ? { excluded } : {}), ...clusterFields(record) };
  const rev = await cas(committed, revision);
  await failpoint("after-commit");
  return { record: committed, revision: rev };
}

/**
 * A cluster root commits only what every member node proved (docs/cluster.md invariant 2): the
 * record's `nodes` entry of each member must carry this generation. No `members`: a single broker.
 */
export function assertMembersProven(record: InventoryRecord, generation: number, guards: Guards = GUARDS_ON, pending?: PendingMutation): void {
  if (!record.members || guards.CLUSTER_COMMIT_UNPROVEN) return;
  const behind = record.members.filter((m) => record.nodes?.[m]?.appliedGeneration !== generation);
  if (behind.length === 0) return;
  // An add may leave a down node behind once some node proved it (invariant 4); it catches up at its next boot.
  if (mayLeaveNodesBehind(pending, guards) && behind.length < record.members.length) return;
  throw new CotalError("cluster-unproven", `generation ${generation} is not proven on node${behind.length > 1 ? "s" : ""} ${behind.join(", ")}; nothing was committed`, {
    next: `cotal up && ${RERUN}   # up restarts a stopped node with every tenant held; the re-run completes the change on every node`,
    details: { behind, generation },
  });
}

/**
 * The records a rollback of `pending` may delete: only those the claim minted, never one the record
 * accounts for, and never one whose account the config on disk preloads (a KV that lost its last
 * writes can hold a claim for a tenant the promoted config already serves; docs/resume.md).
 */
export function mintedRecordsToDelete(layout: RootLayout, record: InventoryRecord, pending: PendingMutation): string[] {
  if (pending.op === "reconcile") return []; // a reconcile never creates, deletes or edits a record
  const keep = accountedNames(record);
  let conf = "";
  try {
    conf = readFileSync(layout.serverConf, "utf8");
  } catch {
    // no config on disk: nothing preloads anything
  }
  const preloaded = new Set(preloadedAccounts(conf));
  // A claim without `mints` predates the field; its adds are the upper bound, guarded as above.
  return (pending.mints ?? pending.adds).filter((name) => {
    if (keep.has(name)) return false;
    const rec = loadSpaceAccount(layout, name);
    return !(rec && preloaded.has(rec.publicKey));
  });
}

/** The files a claim changed before promotion, put back: staged config, a re-signed record, minted records. */
export function undoClaimFiles(layout: RootLayout, record: InventoryRecord, pending: PendingMutation, guards: Guards): void {
  rmSync(layout.stagedConf(pending.generation, pending.leaseId), { force: true });
  if (pending.limits) restoreLimitsChange(layout, pending.limits, guards);
  for (const space of mintedRecordsToDelete(layout, record, pending)) {
    rmSync(layout.accountFile(space), { force: true });
    rmSync(layout.spaceDir(space), { recursive: true, force: true });
  }
}

/** A claim that never reached the broker is undone: staged file, the records it minted, pending. */
export async function rollbackUnpromoted(layout: RootLayout, cas: CasWrite, base: VersionedRecord, pending: PendingMutation, guards: Guards): Promise<VersionedRecord> {
  undoClaimFiles(layout, base.record, pending, guards);
  const cleared: InventoryRecord = { ...base.record, pending: null };
  return { record: cleared, revision: await cas(cleared, base.revision) };
}

export function describePending(p: PendingMutation): string {
  const what = p.limits ? p.limits.space : [...p.adds.map((s) => `+${s}`), ...p.removes.map((s) => `-${s}`)].join(" ");
  return `${p.op} ${what} by ${p.writer} (generation ${p.generation})`;
}
