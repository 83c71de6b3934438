import { GUARDS_ON, type Guards, type SagaLimits } from "../guards.js";
import { CotalError, isCotalError } from "../errors.js";
import { brokerState } from "../broker/runtime.js";
import type { AuthorityStore } from "../inventory/authority-store.js";
import { diffLists, type InventoryRecord } from "../inventory/record.js";
import { decideResume } from "../inventory/resume-decision.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { provisionSpace, type ProvisionResult } from "../provision/provision-space.js";
import { clusterOf, tenantReplicasOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import { oweProvisioning, settleProvisioning } from "../provision/owed.js";
import { accountInventory, corruptError, loadAuthorityAccount, loadSpaceAccount, type CorruptRecord } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { requireRoot } from "../root/require-root.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { digestOfServerConf } from "../saga/digest.js";
import { journalRefusal, type JournalEntry } from "../journal/journal.js";
import { writeObserverCreds } from "../saga/materialise.js";
import { runMutation, type MutationResult } from "../saga/mutation.js";
import { renderList } from "../saga/render-list.js";
import { configPicture } from "../render/config-picture.js";
import { deriveState, type DerivedState } from "./derive-state.js";
import { openLiveSession, openOfflineSession, type Session } from "../verb/session.js";
import { withVerb } from "../verb/verb.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";
export type Direction = "disk" | "kv";

export interface ReconcilePlan {
  direction: Direction;
  /** The list the broker will preload afterwards. */
  target: string[];
  /** Every space that stops connecting, by name, with why. */
  evicts: { name: string; why: string }[];
  /** Records on disk that become trusted (adopt-disk). */
  admits: string[];
  /** Records kept on disk but deliberately not preloaded (adopt-kv). */
  excluded: string[];
}

export interface ReconcileReport {
  root: string;
  brokerRunning: boolean;
  disk: { spaces: string[]; corrupt: CorruptRecord[] };
  kv: (InventoryRecord & { revision: number }) | null;
  diskOnly: string[];
  kvOnly: string[];
  state: DerivedState;
  why: string;
  plan?: ReconcilePlan;
}

export interface ReconcileOptions {
  root: string;
  direction?: Direction;
  yes?: boolean;
  /** Called before any refusal or action: the operator always sees the picture (docs/refusals.md). */
  onReport: (report: ReconcileReport) => void;
  /** Interactive confirmation (a TTY): must return true only for a typed answer restating the count. */
  confirm?: (plan: ReconcilePlan) => Promise<boolean>;
  onNotice?: (message: string) => void;
  lockWaitMs?: number;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
  /** What the entry hands the saga beside the guards (its retry bound, its lease wait). */
  saga?: SagaLimits;
}

export interface ReconcileResult {
  report: ReconcileReport;
  outcome: "reconciled" | "promoted" | "noop";
  saga: MutationResult;
  /** Admitted records provisioned like any added space (running broker only). */
  provisioned: ProvisionResult[];
}

export function planReconcile(direction: Direction, disk: readonly string[], record: InventoryRecord): ReconcilePlan {
  const { diskOnly, kvOnly } = diffLists(disk, record);
  if (direction === "disk") {
    return {
      direction,
      target: [...disk].sort(),
      evicts: kvOnly.map((name) => ({ name, why: "listed by the broker, no record on disk: it is dropped from the list" })),
      admits: [...diskOnly, ...(record.excluded ?? []).filter((n) => disk.includes(n))].sort(),
      excluded: [],
    };
  }
  const excluded = [...new Set([...diskOnly, ...(record.excluded ?? []).filter((n) => disk.includes(n))])].sort();
  return {
    direction,
    target: [...record.spaces],
    evicts: diskOnly.map((name) => ({ name, why: `account.<hex>.json present on disk, not in the broker list: it stops being preloaded (the record is NOT deleted; re-add with \`cotal space add ${name}\`)` })),
    admits: [],
    excluded,
  };
}

/**
 * docs/refusals.md: print disk list, KV list, both diffs and the derived state, always; refuse without a
 * direction; print the blast radius by name and require --yes (or a typed confirmation); then run
 * the saga with the claim fenced at the revision that was printed. Never touches an account record.
 */
export async function reconcile(opts: ReconcileOptions): Promise<ReconcileResult> {
  const root = canonicalRoot(opts.root);
  requireRoot(root);
  const verb = `broker reconcile${opts.direction ? ` --adopt-${opts.direction}` : ""}`;
  // A removal journal is let through only to be checked against the record below (docs/refusals.md).
  const guards = opts.guards ?? GUARDS_ON;
  return withVerb({ root, guards, purpose: `cotal ${verb}`, journal: { verb: "broker reconcile", says: verb }, lockWaitMs: opts.lockWaitMs ?? 30_000, certain: false }, async ({ layout, lock, journal }) => {
    const st = brokerState(layout);
    if (!st.running) refuseOfflineOnCluster(layout, guards, `cotal ${verb}`, "needs the running cluster (offline, it reconciles through a private broker on the store)");
    const session = st.running ? await openLiveSession(layout, verb, { ...opts, guards }) : await openOfflineSession(layout, verb, { ...opts, guards });
    try {
      return await reconcileIn(layout, session, st.running, journal, lock, { ...opts, guards });
    } finally {
      await session.close().catch(() => undefined);
    }
  });
}

async function reconcileIn(layout: RootLayout, session: Session, running: boolean, journal: JournalEntry | undefined, lock: MaintenanceLock, opts: ReconcileOptions & { guards: Guards }): Promise<ReconcileResult> {
  const { store } = session;
  const { guards } = opts;
  const { report, inv, disk, kv, diff, digest } = await readReport(layout, store, running);

  // an unreadable record makes every resolution a guess; refuse before offering one.
  if (inv.corrupt.length > 0) {
    opts.onReport(report);
    throw corruptError(inv.corrupt);
  }
  if (!kv) {
    opts.onReport(report);
    throw new CotalError("inventory-unreachable", "the broker has no inventory record yet, so there is nothing to reconcile against", { next: "cotal up --detach   # seeds the record from disk" });
  }
  // A standing removal blocks reconcile, except where its own re-run cannot finish (an unresumable
  // record); then reconcile runs, and the space being removed is never admitted.
  const removing = journal?.op === "space-rm" ? journal.space : undefined;
  if (journal && removing && !guards.IGNORE_JOURNAL && decideResume(kv, digest).action !== "refuse") {
    opts.onReport(report);
    throw journalRefusal(journal, { verb: "broker reconcile resumable" }) as CotalError;
  }
  const honour = removing !== undefined && !guards.IGNORE_JOURNAL ? removing : undefined;
  const diskList = honour ? disk.filter((n) => n !== removing) : disk;
  const record = honour ? { ...kv, spaces: kv.spaces.filter((n) => n !== honour) } : kv;
  if (!opts.direction) {
    const disk_ = planReconcile("disk", diskList, record);
    const kv_ = planReconcile("kv", diskList, record);
    opts.onReport(report);
    throw new CotalError("direction-required", `reconcile needs a direction; there is no default:\n  --adopt-disk  the disk records are the truth: ${radius(disk_)}\n  --adopt-kv    the broker's list is the truth: ${radius(kv_)}${honour ? `\n  (${honour} is being removed: neither direction admits it)` : ""}`, {
      next: "cotal broker reconcile --adopt-disk   # or --adopt-kv; add --yes once you have read the blast radius",
      details: { plans: { disk: disk_, kv: kv_ } },
    });
  }
  const plan = planReconcile(opts.direction, diskList, record);
  if (honour && kv.spaces.includes(honour)) plan.evicts.push({ name: honour, why: "its removal is in progress (maintenance journal)" });
  report.plan = plan;
  opts.onReport(report);
  if (opts.direction === "kv" && diff.kvOnly.filter((n) => n !== removing).length > 0) {
    throw new CotalError("render-refused", `--adopt-kv would preload ${diff.kvOnly.join(", ")}, which have no record on disk; a config cannot trust an account it does not have`, {
      next: "restore those records from a backup, or choose --adopt-disk (which drops them)",
    });
  }
  // Everything the render needs is checked before the claim, so a refusal leaves no PENDING behind.
  renderList(layout, plan.target, guards);
  if (!opts.yes) {
    const ok = opts.confirm ? await opts.confirm(plan) : false;
    if (!ok) {
      throw new CotalError("confirmation-required", `nothing was changed: ${radius(plan)}`, {
        next: `cotal broker reconcile --adopt-${opts.direction} --yes`,
      });
    }
  }
  if (running && plan.admits.length > 0) oweProvisioning(layout, plan.admits); // settled once provisioned below
  let saga: MutationResult;
  try {
    saga = await runMutation(session.envWith(lock), { op: "reconcile", target: plan.target, excluded: plan.excluded, expectRevision: kv.revision, verb: `broker reconcile --adopt-${opts.direction}` });
  } catch (err) {
    if (!isCotalError(err, "conflict")) throw err;
    // the decision was made against a state that no longer holds; show the new one and stop.
    const again = await readReport(layout, store, running);
    opts.onReport(again.report);
    throw new CotalError("conflict", `the inventory moved since it was printed (revision ${kv.revision} → ${again.kv?.revision ?? "none"}); nothing was changed, and the new state is printed above`, {
      next: `cotal broker reconcile --adopt-${opts.direction}   # decide again against the new state`,
      cause: err,
    });
  }
  // Admitted records become tenants: they get their streams and $SYS observer like any added space.
  const provisioned: ProvisionResult[] = [];
  if (running && saga.outcome === "committed") {
    const broker = loadBrokerTrust(layout);
    for (const name of plan.admits) {
      const rec = loadSpaceAccount(layout, name);
      if (!rec) continue;
      writeObserverCreds(layout, broker, name, guards);
      provisioned.push(await provisionSpace(session.url, rec, tenantReplicasOf(clusterOf(layout, loadSettings(layout)))));
    }
  }
  if (running && saga.outcome === "committed") settleProvisioning(layout, plan.admits);
  return { report, outcome: saga.outcome === "committed" ? "reconciled" : saga.outcome, saga, provisioned };
}

/** Disk list, KV list, diffs and derived state, read fresh (printed before and after any decision). */
async function readReport(layout: RootLayout, store: AuthorityStore, running: boolean) {
  const inv = accountInventory(layout);
  const disk = inv.spaces.map((s) => s.name);
  const vr = await store.read();
  const kv = vr ? { ...vr.record, revision: vr.revision } : null;
  const trust = (() => {
    try {
      const b = loadBrokerTrust(layout);
      return [b.system.publicKey, loadAuthorityAccount(layout).publicKey];
    } catch {
      return [];
    }
  })();
  const picture = configPicture(readTextIfExists(layout.serverConf), inv.spaces, trust);
  const diff = kv ? diffLists(disk, kv) : { diskOnly: disk, kvOnly: [] };
  const digest = digestOfServerConf(layout);
  const derived = deriveState({
    exists: true,
    corrupt: inv.corrupt.length,
    running,
    ...(kv ? { record: kv } : {}),
    diskNames: disk,
    preloadedNames: picture.preloadedNames,
    unknownPreloads: picture.unknownKeys.length,
    ...(digest ? { serverConfDigest: digest } : {}),
  });
  const report: ReconcileReport = { root: layout.root, brokerRunning: running, disk: { spaces: disk, corrupt: inv.corrupt }, kv, ...diff, state: derived.state, why: derived.why };
  return { report, inv, disk, kv, diff, digest };
}

export function radius(plan: ReconcilePlan): string {
  const ev = plan.evicts.length === 0 ? "evicts nobody" : `EVICTS ${plan.evicts.length} space${plan.evicts.length === 1 ? "" : "s"} (${plan.evicts.map((e) => e.name).join(", ")})`;
  const ad = plan.admits.length > 0 ? `; admits ${plan.admits.join(", ")}` : "";
  return `${ev}${ad}`;
}
