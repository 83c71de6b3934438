import { existsSync } from "node:fs";
import { SagaError, isSagaError } from "../errors.js";
import { startMaintenanceBroker, type MaintenanceBroker } from "../broker/maintenance-broker.js";
import { brokerState } from "../broker/runtime.js";
import { AuthorityStore } from "../inventory/authority-store.js";
import { diffLists, type InventoryRecord } from "../inventory/record.js";
import { decideResume } from "../inventory/resume.js";
import { releaseMaintenanceLock, waitForMaintenanceLock } from "../lock/maintenance-lock.js";
import { preloadedAccounts } from "../render/preloaded-accounts.js";
import { accountInventory, corruptError, type CorruptRecord } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { digestOfServerConf } from "../saga/digest.js";
import { runMutation, type MutationResult, type SagaEnv } from "../saga/mutation.js";
import { deriveState, type DerivedState } from "./derive-state.js";
import { leaseKeyFor } from "./session.js";
import { loadAuthorityAccount } from "../root/account-store.js";

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
  /** Called before any refusal or action: the operator always sees the picture (001 §7.2). */
  onReport: (report: ReconcileReport) => void;
  /** Interactive confirmation (a TTY): must return true only for a typed answer restating the count. */
  confirm?: (plan: ReconcilePlan) => Promise<boolean>;
  onNotice?: (message: string) => void;
  lockWaitMs?: number;
}

export interface ReconcileResult {
  report: ReconcileReport;
  outcome: "reconciled" | "promoted" | "noop";
  saga: MutationResult;
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
 * 001 §7: print disk list, KV list, both diffs and the derived state, always; refuse without a
 * direction; print the blast radius by name and require --yes (or a typed confirmation); then run
 * the saga with the claim fenced at the revision that was printed. Never touches an account record.
 */
export async function reconcile(opts: ReconcileOptions): Promise<ReconcileResult> {
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) throw new SagaError("root-missing", `no root at ${layout.root}`, { exit: "cotal up --detach" });
  const lock = await waitForMaintenanceLock(layout.root, "cotal broker reconcile", opts.lockWaitMs ?? 30_000);
  let mb: MaintenanceBroker | undefined;
  let store: AuthorityStore | undefined;
  try {
    const st = brokerState(layout);
    let url: string;
    if (st.running) url = st.runtime.url;
    else {
      mb = await startMaintenanceBroker(layout);
      url = mb.url;
    }
    store = await AuthorityStore.connect(url, loadAuthorityAccount(layout), { name: "cotal broker reconcile" });
    const { report, inv, disk, kv, diff, digest } = await readReport(layout, store, st.running);

    // §7.6: an unreadable record makes every resolution a guess; refuse before offering one.
    if (inv.corrupt.length > 0) {
      opts.onReport(report);
      throw corruptError(inv.corrupt);
    }
    if (!kv) {
      opts.onReport(report);
      throw new SagaError("inventory-unreachable", "the broker has no inventory record yet, so there is nothing to reconcile against", { exit: "cotal up --detach   # seeds the record from disk" });
    }
    if (kv.pending) {
      const d = decideResume(kv, digest);
      if (d.action !== "refuse") {
        opts.onReport(report);
        throw new SagaError("resume-refused", `an interrupted mutation is pending and can be resumed (${d.action}); resume it before choosing a direction`, {
          exit: "cotal up   # resumes it by the crash-resume table; then run cotal broker reconcile again if still needed",
        });
      }
    }
    if (!opts.direction) {
      const disk_ = planReconcile("disk", disk, kv);
      const kv_ = planReconcile("kv", disk, kv);
      opts.onReport(report);
      throw new SagaError("direction-required", `reconcile needs a direction; there is no default:\n  --adopt-disk  the disk records are the truth: ${radius(disk_)}\n  --adopt-kv    the broker's list is the truth: ${radius(kv_)}`, {
        exit: "cotal broker reconcile --adopt-disk   # or --adopt-kv; add --yes once you have read the blast radius",
        details: { plans: { disk: disk_, kv: kv_ } },
      });
    }
    const plan = planReconcile(opts.direction, disk, kv);
    report.plan = plan;
    opts.onReport(report);
    if (opts.direction === "kv" && diff.kvOnly.length > 0) {
      throw new SagaError("render-refused", `--adopt-kv would preload ${diff.kvOnly.join(", ")}, which have no record on disk; a config cannot trust an account it does not have`, {
        exit: "restore those records from a backup, or choose --adopt-disk (which drops them)",
      });
    }
    if (!opts.yes) {
      const ok = opts.confirm ? await opts.confirm(plan) : false;
      if (!ok) {
        throw new SagaError("confirmation-required", `nothing was changed: ${radius(plan)}`, {
          exit: `cotal broker reconcile --adopt-${opts.direction} --yes`,
        });
      }
    }
    const env: SagaEnv = {
      layout,
      store,
      ...(st.running ? { runtime: st.runtime } : {}),
      lock,
      leaseKey: leaseKeyFor(layout),
      ...(opts.onNotice ? { onNotice: opts.onNotice } : {}),
    };
    let saga: MutationResult;
    try {
      saga = await runMutation(env, { op: "reconcile", adds: [], removes: [], target: plan.target, excluded: plan.excluded, expectRevision: kv.revision, verb: `broker reconcile --adopt-${opts.direction}` });
    } catch (err) {
      if (!isSagaError(err, "conflict")) throw err;
      // §7.5: the decision was made against a state that no longer holds; show the new one and stop.
      const again = await readReport(layout, store, st.running);
      opts.onReport(again.report);
      throw new SagaError("conflict", `the inventory moved since it was printed (revision ${kv.revision} → ${again.kv?.revision ?? "none"}); nothing was changed, and the new state is printed above`, {
        exit: `cotal broker reconcile --adopt-${opts.direction}   # decide again against the new state`,
        cause: err,
      });
    }
    return { report, outcome: saga.outcome === "committed" ? "reconciled" : saga.outcome, saga };
  } finally {
    await store?.close().catch(() => undefined);
    await mb?.stop();
    releaseMaintenanceLock(lock);
  }
}

/** Disk list, KV list, diffs and derived state, read fresh (printed before and after any decision). */
async function readReport(layout: RootLayout, store: AuthorityStore, running: boolean) {
  const inv = accountInventory(layout);
  const disk = inv.spaces.map((s) => s.name);
  const vr = await store.read();
  const kv = vr ? { ...vr.record, revision: vr.revision } : null;
  const conf = readTextIfExists(layout.serverConf) ?? "";
  const preloaded = new Set(preloadedAccounts(conf));
  const diff = kv ? diffLists(disk, kv) : { diskOnly: disk, kvOnly: [] };
  const digest = digestOfServerConf(layout);
  const derived = deriveState({
    exists: true,
    corrupt: inv.corrupt.length,
    running,
    ...(kv ? { record: kv } : {}),
    diskNames: disk,
    preloadedNames: inv.spaces.filter((s) => preloaded.has(s.publicKey)).map((s) => s.name),
    unknownPreloads: 0,
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
