import type { Guards } from "../guards.js";
import { rmSync } from "node:fs";
import { RERUN, CotalError } from "../errors.js";
import type { VersionedRecord } from "../inventory/inventory-store.js";
import type { InventoryRecord, PendingMutation } from "../inventory/record.js";
import { decideResume, type ResumeDecision } from "../inventory/resume-decision.js";
import type { RootLayout } from "../root/layout.js";
import { digestOfServerConf } from "./digest.js";
import { commitPending, describePending, rollbackUnpromoted, type CasWrite } from "./finish.js";
import { serverDigestField, type ReloadVerdict } from "./reload.js";
import { renderList } from "./render-list.js";
import { applyConfig } from "./apply.js";
import { restoreLimitsChange } from "./limits-record.js";

/** What a running broker offers the executor; absent offline (private broker: the next boot proves). */
export interface LiveResume {
  /** SIGHUP, proof from the log, the reconnect; never the proof CAS (the executor writes that). */
  reload(): Promise<ReloadVerdict>;
  /** Whether this writer still holds the lease: every rename back is fenced by it. */
  leaseHeld(): Promise<boolean>;
}

export interface ResumeDriver {
  layout: RootLayout;
  cas: CasWrite;
  /** reconcile: the operator's printed direction replaces any claim instead of resuming it. */
  replaces?: boolean;
  live?: LiveResume;
  onNotice?: (message: string) => void;
  /** The verb's guards (docs/ablation.md). */
  guards: Guards;
}

/** How a resume ended; each caller decides what the outcome means for its own verb. */
export type ResumeOutcome =
  | { kind: "clean"; base: VersionedRecord; decision: ResumeDecision }
  | { kind: "rolled-back"; base: VersionedRecord; decision: ResumeDecision; pending: PendingMutation; why: string }
  | { kind: "committed"; base: VersionedRecord; decision: ResumeDecision; pending: PendingMutation }
  /** Offline: boot server.conf as it is; its start is the proof, then prove (forward) and commit. */
  | { kind: "boot"; mode: "forward" | "commit"; base: VersionedRecord; decision: ResumeDecision; pending: PendingMutation }
  | { kind: "replaced"; base: VersionedRecord; decision: ResumeDecision };

function refusal(decision: Extract<ResumeDecision, { action: "refuse" }>, record: InventoryRecord): CotalError {
  return new CotalError("resume-refused", `the inventory is in a state no crash of a cooperative writer leaves (${decision.why})`, {
    next: "cotal broker reconcile   # prints the disk list, the KV list and the record in full",
    details: { record },
  });
}

/**
 * The proof CAS: the only writer of appliedGeneration (docs/resume.md). With the verdict of a
 * 2.11+ server, its own config_digest is kept beside cotal's byte digest.
 */
export async function recordProof(cas: CasWrite, base: VersionedRecord, pending: PendingMutation, verdict?: ReloadVerdict): Promise<VersionedRecord> {
  const proven: InventoryRecord = { ...base.record, appliedGeneration: pending.generation, configDigest: pending.stagedDigest ?? null, pending, ...(verdict ? serverDigestField(verdict, pending.stagedDigest) : {}), ...nodeProofsOf(base.record, verdict, pending.generation) };
  return { record: proven, revision: await cas(proven, base.revision) };
}

/** A cluster reload's per-node proofs, stamped with the generation they prove, over the record's older ones. */
function nodeProofsOf(record: InventoryRecord, verdict: ReloadVerdict | undefined, generation: number): Pick<InventoryRecord, "nodes"> {
  if (verdict?.outcome !== "reloaded" || !verdict.nodes) return {};
  const fresh = Object.fromEntries(Object.entries(verdict.nodes).map(([name, p]) => [name, { ...p, appliedGeneration: generation }]));
  return { nodes: { ...record.nodes, ...fresh } };
}

/**
 * The one executor of the crash-resume table, for the live saga, cold boot, `up` on a running root
 * and reconcile. The caller holds the maintenance lock and the writer lease.
 */
export async function executeResume(base: VersionedRecord, driver: ResumeDriver): Promise<ResumeOutcome> {
  const { layout, cas } = driver;
  const { guards } = driver;
  const decision = decideResume(base.record, digestOfServerConf(layout));
  if (decision.action === "fresh") return { kind: "clean", base, decision };
  const pending = base.record.pending;
  const what = pending ? describePending(pending) : `generation ${base.record.generation} (applied ${base.record.appliedGeneration})`;
  driver.onNotice?.(`resuming ${what}: ${decision.action} (${decision.why})`);
  if (driver.replaces) {
    // The replacing claim is CAS'd at base.revision, so the old claim is overwritten atomically.
    if (pending) rmSync(layout.stagedConf(pending.generation, pending.leaseId), { force: true });
    driver.onNotice?.(`reconcile replaces ${what}`);
    return { kind: "replaced", base: { record: { ...base.record, pending: null }, revision: base.revision }, decision };
  }
  if (decision.action === "refuse" || !pending) throw refusal(decision as Extract<ResumeDecision, { action: "refuse" }>, base.record);
  switch (decision.action) {
    case "rollback-unstaged":
    case "rollback-staged":
      return { kind: "rolled-back", base: await rollbackUnpromoted(layout, cas, base, pending, guards), decision, pending, why: decision.why };
    case "commit-only":
      if (!driver.live) return { kind: "boot", mode: "commit", base, decision, pending };
      return { kind: "committed", base: await commitPending(layout, cas, base.record, base.revision, pending, guards), decision, pending };
    case "complete-forward": {
      if (!driver.live) return { kind: "boot", mode: "forward", base, decision, pending };
      const verdict = await driver.live.reload();
      if (verdict.outcome === "reloaded") {
        const proven = await recordProof(cas, base, pending, verdict);
        return { kind: "committed", base: await commitPending(layout, cas, proven.record, proven.revision, pending, guards), decision, pending };
      }
      if (verdict.outcome === "failed") return rollbackRejected(base, pending, decision, verdict, driver, driver.live);
      throw new CotalError("reload-unproven", `completing ${what} forward: the reload of the promoted config was unproven; rollback is forbidden while the broker may serve it`, {
        next: `${RERUN}   # once the cause in the broker log is fixed; it completes forward`,
        details: { logTail: verdict.logTail },
      });
    }
  }
}

/**
 * The broker said "Failed to reload" to a promoted config: it provably still runs the committed
 * bytes, so re-promoting those (re-rendered, digest-checked, lease-fenced, re-proven) evicts nobody.
 */
async function rollbackRejected(base: VersionedRecord, pending: PendingMutation, decision: ResumeDecision, verdict: Extract<ReloadVerdict, { outcome: "failed" }>, driver: ResumeDriver, live: LiveResume): Promise<ResumeOutcome> {
  const { layout } = driver;
  const { guards } = driver;
  const stuck = (why: string): CotalError =>
    new CotalError("reload-unproven", `the broker rejected the promoted config of generation ${pending.generation} (${verdict.line.trim()}), and ${why}`, {
      next: "cotal broker reconcile   # replaces the claim after printing it",
      details: { logTail: verdict.logTail, pending },
    });
  if (pending.limits) restoreLimitsChange(layout, pending.limits, guards); // the committed bytes carry the old JWT
  const committed = renderList(layout, base.record.spaces, guards);
  if (committed.digest !== base.record.configDigest) throw stuck("the committed list no longer renders to the committed bytes, so there is nothing proven to go back to");
  // Back through the one apply path (saga/apply.ts): staged, fenced on the lease, renamed, reloaded.
  const back = await applyConfig({
    target: layout.serverConf,
    config: () => committed.text,
    fence: { held: () => live.leaseHeld(), lost: () => stuck("this writer lost its lease before renaming back") },
    reload: () => live.reload(),
    record: async (again) => again,
  });
  if (back.verdict.outcome !== "reloaded") throw stuck(`re-loading the committed config was ${back.verdict.outcome} too`);
  const cleared = await rollbackUnpromoted(layout, driver.cas, base, pending, guards);
  return { kind: "rolled-back", base: cleared, decision, pending, why: `the broker rejected the promoted config (${verdict.line.trim()}); the committed config was restored and proven` };
}
