import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { listedOrClaimed } from "../inventory/record.js";
import type { ProvisionResult } from "../provision/provision-space.js";
import { CLUSTER_REJOIN_MS, provisionSpaces } from "../provision/provision-batch.js";
import { clusterOf, tenantReplicasOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { assertCanMintSysCreds, existingSpaceRecord } from "../saga/materialise.js";
import { runMutation, type MutationResult } from "../saga/mutation.js";
import { formatBytes, type SpaceQuota } from "../trust/limits.js";
import type { SessionHooks } from "../verb/session.js";
import { oweProvisioning, settleOwed } from "../provision/owed.js";
import { failpoint } from "../failpoints.js";
import { assertBudgetAllows, limitsForQuota } from "./space-limits.js";
import { withLiveVerb } from "../verb/verb.js";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { assertFdBudget, awaitFdBudget } from "../broker/fd-budget.js";
import { readRuntime } from "../broker/runtime.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { ownerStatus } from "../lock/process-identity.js";
import { RootLayout } from "../root/layout.js";
import { parseServerVersion } from "../broker/server-features.js";

export interface SpaceAddOptions extends SessionHooks {
  root: string;
  names: string[];
  /** How long to wait for another writer's maintenance lock (default 30 s). */
  lockWaitMs?: number;
  /** Limits for the new spaces over the template's quota (README "Quotas"); existing spaces keep theirs. */
  quota?: Partial<SpaceQuota>;
  /** Counted provisioning progress after the commit (the CLI draws it as a bar): called after each space. */
  onProvision?: (p: { done: number; total: number; space: string }) => void;
  /**
   * The queued path (packages/jobs): the decision read is made once the lock is held, so batches
   * queued on one host never share a read (docs/resume.md, R1; the claim CAS still fences other hosts).
   */
  decideUnderLock?: boolean;
  /** Called once the saga committed and the maintenance lock is released, before provisioning. */
  onCommitted?: (r: MutationResult) => void;
}

export interface SpaceAddResult extends MutationResult {
  requested: string[];
  provisioned: ProvisionResult[];
}

/** Validates a batch: every name, no duplicates, at least one. Nothing is written before this passes. */
export function validateBatch(names: readonly string[], guards: Guards): string[] {
  if (names.length === 0) throw new CotalError("invalid-argument", "no space named: give one or more names, or --from FILE"); // the CLI prints the --help line
  const seen = new Set<string>();
  for (const n of names) {
    assertSpaceName(n, guards);
    if (seen.has(n)) throw new CotalError("invalid-argument", `space ${n} is named twice`, { next: "name each space once" });
    seen.add(n);
  }
  return [...seen];
}

/**
 * Before the lock: a batch that fits once the local broker closes its idle block files waits for
 * that here, bounded, so no other verb waits on the lock meanwhile (docs/lifecycle.md, "Open
 * files"). The check under the lock stays the one that decides.
 */
async function awaitFdRoom(opts: SpaceAddOptions, names: readonly string[], label: string | undefined, guards: Guards): Promise<void> {
  let broker: { pid: number; version: string; fresh: number } | undefined;
  try {
    const layout = new RootLayout(canonicalRoot(opts.root));
    const rt = readRuntime(layout);
    // a recycled pid is not the broker: only a live recorded owner is asked
    if (!rt || rt.nodes || rt.owner.host !== hostname() || ownerStatus(rt.owner) !== "alive") return;
    // only a count: the verb reads and validates the records themselves under the lock
    broker = { pid: rt.owner.pid, version: rt.serverVersion, fresh: names.filter((n) => !existsSync(layout.accountFile(n))).length };
  } catch {
    return; // a root this cannot read is the verb's own preamble's to refuse, with its own code
  }
  await awaitFdBudget(broker.pid, parseServerVersion(broker.version), broker.fresh, `cotal space add ${label}`, { guards, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) });
}

/**
 * docs/lifecycle.md: through the saga: one generation (one reload) for the whole batch. Forward-idempotent:
 * present spaces are a no-op in the inventory and are provisioned again, which completes a crashed add.
 */
export async function spaceAdd(opts: SpaceAddOptions): Promise<SpaceAddResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const names = validateBatch(opts.names, guards);
  const limits = limitsForQuota(names, opts.quota ?? {}, guards);
  const label = names.length === 1 ? names[0] : `(${names.length} spaces)`;
  await awaitFdRoom(opts, names, label, guards);
  const verb = { ...opts, guards, purpose: `cotal space add ${label}`, journal: { verb: "space add" as const }, lockWaitMs: opts.lockWaitMs ?? 30_000, decideUnderLock: opts.decideUnderLock === true };
  return withLiveVerb(verb, async ({ layout, lock, session, decided, disk, view, releaseLock }) => {
    const broker = loadBrokerTrust(layout);
    for (const n of names) existingSpaceRecord(layout, broker, n); // foreign operator refuses before any write
    assertCanMintSysCreds(broker);
    const fresh = names.filter((n) => !loadSpaceAccount(layout, n));
    if (fresh.length < names.length && opts.quota && Object.keys(opts.quota).length > 0) {
      const minted = new Set(fresh);
      opts.onNotice?.(`existing spaces keep their limits (${names.filter((n) => !minted.has(n)).join(", ")}); change them with \`cotal space limits <name>\``);
    }
    // Under the lock: no other writer's add can slip between this check and the claim.
    const committed = fresh.length > 0 ? assertBudgetAllows(layout, disk, fresh, limits, guards, opts.onNotice) : undefined;
    if (committed && committed.unbounded.length > 0) {
      opts.onNotice?.(`space(s) with unbounded storage can still starve the others: ${committed.unbounded.join(", ")} (next: cotal space limits <name> --max-disk ${formatBytes(limits.disk_storage).replace(/ /g, "")})`);
    }
    // The broker's open files: past its limit stream creation fails after the saga trusted the batch.
    const rt = session.runtime;
    if (fresh.length > 0 && rt.owner.host === hostname()) assertFdBudget(rt.owner.pid, parseServerVersion(rt.serverVersion), fresh.length, `cotal space add ${label}`, guards);
    // Owed before the saga trusts them, settled once provisioned: a kill in between stays visible.
    const owed = oweProvisioning(layout, names);
    let result: MutationResult;
    try {
      result = await runMutation(session.envWith(lock), { op: names.length === 1 ? "add" : "batch", adds: names, verb: "space add", limits }, decided, view);
    } catch (err) {
      // A refused saga owes nothing for the names the record neither lists nor claims.
      const cur = await session.store.read().catch(() => undefined);
      if (cur) {
        const trusted = listedOrClaimed(cur.record);
        settleOwed(owed, names.filter((n) => !trusted.has(n)));
      }
      throw err;
    }
    // Committed: the next writer may run its saga while this one provisions (docs/saga.md,
    // "Provisioning after the commit"). The marker keeps what is still owed visible, and a
    // `space rm` of one of these names waits for it.
    releaseLock();
    opts.onCommitted?.(result);
    await failpoint("add-provisioning");
    // Each space is its own account, so provisioning is independent: a paced pool, creds batched (provision/provision-batch.ts).
    const records = names.map((n) => loadSpaceAccount(layout, n)).filter((r): r is NonNullable<typeof r> => r !== undefined);
    const provisioned = await provisionSpaces(layout, broker, session.runtime, records, { onProvision: opts.onProvision, onNotice: opts.onNotice, onRetry: opts.onProvisionRetry, ...(session.unanswered && session.unanswered.length > 0 ? { retryForMs: CLUSTER_REJOIN_MS } : {}), replicas: tenantReplicasOf(clusterOf(layout, loadSettings(layout))), guards });
    settleOwed(owed);
    return { ...result, requested: names, provisioned };
  });
}
