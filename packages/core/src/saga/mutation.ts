import type { Guards } from "../guards.js";
import { isCotalError, RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { assertLockHeld } from "../lock/maintenance-lock.js";
import type { LeaseHolder } from "../inventory/lease.js";
import type { InventoryStore, VersionedRecord } from "../inventory/inventory-store.js";
import { claimedSpaces, sortedNames, type InventoryRecord, type LimitsChange, type PendingMutation } from "../inventory/record.js";
import type { ResumeDecision } from "../inventory/resume-decision.js";
import { loadSpaceAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import type { AccountLimits } from "../trust/limits.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { acquireLeaseWaiting, selfHolder } from "./lease-holder.js";
import { materialiseAdds } from "./materialise.js";
import { applyLimitsChange } from "./limits-record.js";
import type { ReloadVerdict } from "./reload.js";
import type { Reloader } from "./reloader.js";
import { commitPending, describePending, rollbackUnpromoted, undoClaimFiles } from "./finish.js";
import { executeResume, recordProof } from "./resume-executor.js";
import { applyConfig } from "./apply.js";
import { mayLeaveNodesBehind, recordPartialProofs, type RevisionMove } from "./partial-proofs.js";
import { renderList, type KnownRecords } from "./render-list.js";
import { digestOfServerConf } from "./digest.js";
import { configDigest } from "../render/server-config.js";
import type { PhaseListener, SagaTiming } from "./steps.js";

/**
 * What a writer asks the saga for, one shape per op. Every shape names its `verb`, for the writer
 * identity an operator reads. Every op but `resume` is the op its claim records.
 */
export type MutationIntent = ResumeIntent | AddIntent | RemoveIntent | ReconcileIntent | LimitsIntent | RevokeIntent | RotateKeyIntent;

/** Carry out whatever claim stands (the resume table, docs/resume.md) and change nothing else: `up` on a running root, a verb's own resume. A rollback is then the resolution, not a refusal. */
export interface ResumeIntent {
  op: "resume";
  verb: string;
}

/** Trust these names ("add": one, "batch": several), each newly minted account signed with `limits` (default: the template's quota). */
export interface AddIntent {
  op: "add" | "batch";
  adds: readonly string[];
  limits?: AccountLimits;
  verb: string;
}

export interface RemoveIntent {
  op: "remove";
  removes: readonly string[];
  verb: string;
}

/** Adopt exactly `target`, fenced at the revision the operator confirmed; `excluded`: disk records the commit records as deliberately not preloaded (--adopt-kv). */
export interface ReconcileIntent {
  op: "reconcile";
  target: readonly string[];
  expectRevision: number;
  excluded?: readonly string[];
  verb: string;
}

/** Re-sign the one record's JWT; the tenant list stays as it is. */
export interface LimitsIntent {
  op: "limits";
  limitsChange: LimitsChange;
  verb: string;
}

/** Re-sign the one record's JWT with user revocations (ops/space-revoke.ts); claimed and resumed like a limits re-sign. */
export interface RevokeIntent {
  op: "revoke";
  revokeChange: LimitsChange;
  verb: string;
}

/** Re-sign the one record's JWT with a signing key added or removed (ops/space-rotate-key.ts); claimed and resumed like a limits re-sign. */
export interface RotateKeyIntent {
  op: "rotate-key";
  keyChange: LimitsChange;
  verb: string;
}

/** The intents that claim: every one but resume. */
type ClaimingIntent = Exclude<MutationIntent, ResumeIntent>;

/** The names an intent asks to add or remove, or the exact list it adopts (intentDelta's input). */
export interface RequestedNames {
  adds?: readonly string[];
  removes?: readonly string[];
  target?: readonly string[];
}

function requestedNames(intent: ClaimingIntent): RequestedNames {
  switch (intent.op) {
    case "add":
    case "batch":
      return { adds: intent.adds };
    case "remove":
      return { removes: intent.removes };
    case "reconcile":
      return { target: intent.target };
    case "limits":
    case "revoke":
    case "rotate-key":
      return {};
  }
}

/** The one account JWT a re-signing intent changes (limits, revoke, rotate-key), else undefined. */
function resignOf(intent: MutationIntent): LimitsChange | undefined {
  return intent.op === "limits" ? intent.limitsChange : intent.op === "revoke" ? intent.revokeChange : intent.op === "rotate-key" ? intent.keyChange : undefined;
}

export interface SagaEnv {
  layout: RootLayout;
  store: InventoryStore;
  /**
   * The running broker's reload and proof. Absent when the saga runs through a private broker (broker stopped):
   * it then stops after promotion, and the next `up` boots the promoted bytes and commits them.
   */
  reloader?: Reloader;
  /** The root maintenance lock the verb holds; the saga verifies it, never takes its own. */
  lock: MaintenanceLock;
  leaseKey: string;
  /** The verb's guards (docs/ablation.md): every step of the saga takes its switches from here. */
  guards: Guards;
  /** A lost CAS re-reads and re-decides at most this many times (default 5; the entry may hand in COTAL_SAGA_MAX_ATTEMPTS). */
  maxAttempts?: number;
  /** How long to wait for another writer's lease (default 30 s; the entry may hand in COTAL_LEASE_WAIT_MS). */
  leaseWaitMs?: number;
  reloadTimeoutMs?: number;
  onTiming?: (step: SagaTiming, ms: number) => void;
  /** Each step as it starts and ends, in step order, only the steps that run (the CLI's phase line; steps.ts). */
  onPhase?: PhaseListener;
  onNotice?: (message: string) => void;
  /** Each attempt's end, for the exporter's attempt and conflict counters (docs/metrics.md); the core reads no env for it. */
  onAttempt?: (a: { op: MutationIntent["op"]; outcome: "ok" | "conflict" | "error" }) => void;
}

export interface MutationResult {
  outcome: "committed" | "noop" | "promoted";
  generation: number;
  spaces: string[];
  added: string[];
  removed: string[];
  attempts: number;
  conflicts: number;
  reloads: number;
  resumed?: ResumeDecision["action"];
}

/**
 * A verb's certain inventory (verb/verb.ts), read under the maintenance lock after its decision read
 * at `revision`: the render takes the records this claim does not write from it instead of re-reading
 * every file (issue 15). Every record a cooperative writer writes is written under a claim, which
 * moves the revision, so the view holds exactly while the record still stands at `revision`.
 */
export interface DiskView {
  revision: number;
  records: readonly AccountRecord[];
}

function missingRecord(): CotalError {
  return new CotalError("inventory-unreachable", "the broker has no inventory record yet", { next: "cotal up   # seeds the record from disk on a running broker" });
}

/**
 * The decision read a verb makes before it queues for the maintenance lock: on one host the lock
 * serialises writers, so this is where two writers' reads can overlap (R1) and the CAS must catch it.
 */
export async function decisionRead(store: InventoryStore): Promise<VersionedRecord> {
  const pre = await store.read();
  if (!pre) throw missingRecord();
  await failpoint("after-read");
  return pre;
}

/**
 * The delta an intent makes against the committed list, with Sets so it is O(n + change) at any tenant
 * count: `added` are the names the list lacks, `removed` those it holds and drops (both sorted). A
 * name both added and removed stays as it is. The next list itself is derived by `claimedSpaces`.
 */
export function intentDelta(current: readonly string[], intent: RequestedNames): { added: string[]; removed: string[] } {
  const listed = new Set(current);
  if (intent.target) {
    const target = new Set(intent.target);
    return { added: sortedNames([...target].filter((s) => !listed.has(s))), removed: current.filter((s) => !target.has(s)).sort() };
  }
  const requested = intent.adds ?? [];
  const adds = new Set(requested);
  return {
    added: sortedNames(requested.filter((a) => !listed.has(a))),
    removed: sortedNames((intent.removes ?? []).filter((r) => listed.has(r) && !adds.has(r))),
  };
}

/** What step 2 decided: nothing to do, or the delta and the list it leads to. */
type Decision = { kind: "noop" } | { kind: "change"; intent: ClaimingIntent; base: VersionedRecord; added: string[]; removed: string[]; target: string[] };

/** A claim this attempt made (step 3) and the record as this attempt last wrote it. */
interface Claim {
  /** The committed generation the claim was made on. */
  generation: number;
  added: string[];
  removed: string[];
  /** The claimed list (claimedSpaces), what step 5 renders. */
  target: string[];
  pending: PendingMutation;
  record: InventoryRecord;
  revision: number;
}

/** One run of the saga: owns its timings, its CAS revision, and the lease it holds. */
class Mutation {
  reloads = 0;
  /** False once the fence found the lease lost: it is no longer ours to release. */
  releaseLease = true;
  resumed: ResumeDecision["action"] | undefined;
  /** The lease re-check, once held: a cluster reload fences each node's rename with it (docs/cluster.md). */
  fence: (() => Promise<boolean>) | undefined;
  /** The lease this attempt holds: a cluster reload names it in its ask of the nodes elsewhere. */
  leaseId: string | undefined;
  readonly holder: LeaseHolder;
  readonly guards: Guards;

  constructor(
    readonly env: SagaEnv,
    readonly intent: MutationIntent,
  ) {
    this.holder = selfHolder(intent.verb);
    this.guards = env.guards;
  }

  /** DISABLE_CAS, the R1 positive control: claims and commits become last-writer-wins. */
  get casDisabled(): boolean {
    return this.guards.DISABLE_CAS;
  }

  get writer(): string {
    return `pid ${this.holder.pid}@${this.holder.host} (${this.intent.verb})`;
  }

  /** The generation this attempt claimed (its phase events carry it from the claim on). */
  claimed: number | undefined;

  async timed<T>(step: SagaTiming, fn: () => Promise<T> | T): Promise<T> {
    const { onPhase, onTiming } = this.env;
    onPhase?.({ step, state: "start" });
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      const ms = performance.now() - t0;
      onTiming?.(step, ms);
      onPhase?.({ step, state: "done", ms, ...(this.claimed === undefined ? {} : { generation: this.claimed }) });
    }
  }

  /** A CAS update; with a test-only switch it overwrites whatever is there (the lost update it prevents). */
  async cas(record: InventoryRecord, revision: number, at?: "claim" | "stage"): Promise<number> {
    const { guards } = this;
    if (this.casDisabled || (at === "claim" && guards.DISABLE_CLAIM_CAS) || (at === "stage" && guards.DISABLE_STAGE_CAS)) {
      const cur = await this.env.store.read();
      return this.env.store.update(record, cur?.revision ?? revision);
    }
    return this.env.store.update(record, revision);
  }

  async acquireLease(): Promise<LeaseKeeper> {
    const lease = await acquireLeaseWaiting(this.env.store, this.env.leaseKey, this.intent.verb, this.env.leaseWaitMs);
    return new LeaseKeeper(this.env.store, lease);
  }

  /** The reload (the RELOAD request on 2.10+, else SIGHUP; saga/reload.ts), its proof, then this connection's reconnect. */
  async reload(pending?: PendingMutation | null): Promise<ReloadVerdict> {
    const reloader = this.env.reloader;
    if (!reloader) throw new CotalError("broker-not-running", "a reload needs the running broker", { next: "cotal up --detach" });
    const signalledAt = performance.now();
    let verdict = await this.timed("reload-proof", () => reloader.reload({ timeoutMs: this.env.reloadTimeoutMs, ...(this.fence ? { fence: this.fence, recordPartial: this.partialRecorder(this.fence, signalledAt), mayLeaveBehind: mayLeaveNodesBehind(pending, this.guards), ...(this.leaseId ? { leaseId: this.leaseId } : {}) } : {}) }));
    if (this.guards.PROOF_WITHOUT_LOG) verdict = { outcome: "reloaded", via: verdict.via, line: "(unproven: test-only switch)", ms: verdict.ms };
    this.reloads++;
    if (verdict.outcome === "reloaded") await this.timed("reconnect", () => this.env.store.settleAfterReload(signalledAt));
    if (verdict.outcome === "reloaded" && verdict.nodes) for (const n of verdict.notes ?? []) this.env.onNotice?.(n);
    return verdict;
  }

  /**
   * Our own partial-proof CASes moved the record from `from` to `to` during a reload, changing only
   * the claim's partial proofs (which the proof CAS supersedes): a CAS this run meant at `from` is
   * meant at `to`. Any other writer's change breaks the chain, and that CAS then conflicts as it must.
   */
  private moved: RevisionMove | undefined;

  /** A cluster reload's partial proofs, written once the reload's dropped connections settled (saga/partial-proofs.ts). */
  private partialRecorder(fence: () => Promise<boolean>, signalledAt: number) {
    return async (proofs: Parameters<typeof recordPartialProofs>[2]): Promise<void> => {
      await this.env.store.settleAfterReload(signalledAt);
      const m = await recordPartialProofs(this.env.store, fence, proofs, digestOfServerConf(this.env.layout));
      if (m) this.moved = this.moved && this.moved.to === m.from ? { from: this.moved.from, to: m.to } : m;
    };
  }

  readonly casWrite = (record: InventoryRecord, revision: number): Promise<number> => this.cas(record, this.moved?.from === revision ? this.moved.to : revision);

  async commit(record: InventoryRecord, revision: number, pending: PendingMutation): Promise<VersionedRecord> {
    return this.timed("commit", () => commitPending(this.env.layout, this.casWrite, record, revision, pending, this.guards));
  }

  /** Step 2: the crash-resume table, executed by the one executor. Returns the clean record to continue from. */
  async resume(base: VersionedRecord, keeper: LeaseKeeper): Promise<VersionedRecord> {
    const { env, intent } = this;
    const out = await executeResume(base, {
      layout: env.layout,
      cas: this.casWrite,
      replaces: intent.op === "reconcile",
      guards: this.guards,
      ...(env.reloader ? { live: { reload: () => this.reload(base.record.pending), leaseHeld: () => keeper.held() } } : {}),
      ...(env.onNotice ? { onNotice: env.onNotice } : {}),
    });
    if (out.decision.action !== "fresh") this.resumed = out.decision.action;
    switch (out.kind) {
      case "clean":
      case "committed":
      case "replaced":
        return out.base;
      case "rolled-back":
        if (intent.op === "resume") {
          env.onNotice?.(`rolled back ${describePending(out.pending)}: ${out.why}`); // `up` resuming: the rollback is the resolution
          return out.base;
        }
        throw new CotalError("rolled-back", `an interrupted mutation (${describePending(out.pending)}) never reached the broker and was rolled back: ${out.why}`, {
          next: `${RERUN}   # and the interrupted one, if it is still wanted`,
          details: { pending: out.pending },
        });
      case "boot":
        throw new CotalError("resume-refused", `an interrupted mutation (${describePending(out.pending)}) was promoted while the broker was stopped; only booting it can prove it`, {
          next: "cotal up   # boots the promoted config and commits it",
          details: { pending: out.pending },
        });
    }
  }

  /**
   * The records step 5 may take from the verb's view: none unless the record this attempt claims on
   * is the one the view was read after (same revision, nothing pending, nothing resumed, every CAS
   * on); the names the claim itself writes (adds, mints, a limits re-sign) are read from disk anyway.
   */
  knownRecords(view: DiskView | undefined, read: VersionedRecord, pending: PendingMutation): KnownRecords | undefined {
    if (!view) return undefined;
    const writes = new Set([...pending.adds, ...(pending.mints ?? []), ...(pending.limits ? [pending.limits.space] : [])]);
    // STALE_RECORD_VIEW, the view cell's positive control: the render trusts the view for every name, moved revision or not.
    if (this.guards.STALE_RECORD_VIEW) return { records: new Map(view.records.map((r) => [r.name, r])), reread: new Set() };
    const cas = !this.casDisabled && !this.guards.DISABLE_CLAIM_CAS && !this.guards.DISABLE_STAGE_CAS;
    if (!cas || this.intent.op === "reconcile" || this.resumed !== undefined || read.revision !== view.revision || read.record.pending) return undefined;
    return { records: new Map(view.records.map((r) => [r.name, r])), reread: writes };
  }

  /** `decided` is the read the verb made its decision on (before it queued for the lock), if any; `view` its inventory. */
  async attempt(decided?: VersionedRecord, view?: DiskView): Promise<MutationResult> {
    const pre = decided ?? (await this.timed("read", () => this.env.store.read()));
    if (!pre) throw missingRecord();
    if (!decided) await failpoint("after-read");
    const keeper = await this.timed("lease", () => this.acquireLease());
    this.fence = () => keeper.held();
    this.leaseId = keeper.lease.leaseId;
    try {
      const { base, claimedOn } = await this.underLease(pre, keeper);
      const decision = await this.timed("decide", () => this.decide(base));
      if (decision.kind === "noop") return this.result("noop", base.record.generation, base.record.spaces, [], []);
      const claim = await this.claim(base, decision, keeper);
      await this.materialise(claim);
      return await this.applyAndCommit(claim, keeper, this.knownRecords(view, claimedOn, claim.pending));
    } finally {
      await this.timed("release", () => keeper.stop(this.releaseLease));
    }
  }

  result(outcome: MutationResult["outcome"], generation: number, spaces: string[], added: string[], removed: string[]): MutationResult {
    return { outcome, generation, spaces, added, removed, attempts: 1, conflicts: 0, reloads: this.reloads, ...(this.resumed ? { resumed: this.resumed } : {}) };
  }

  /** Steps 1-2 under the lease: the re-read (a moved revision is a conflict), the confirmed revision, the resume. */
  async underLease(pre: VersionedRecord, keeper: LeaseKeeper): Promise<{ base: VersionedRecord; claimedOn: VersionedRecord }> {
    const { env, intent } = this;
    await failpoint("after-lease");
    assertLockHeld(env.lock);
    let base = (await env.store.read()) ?? pre;
    if (!this.casDisabled && base.revision !== pre.revision) {
      throw new CotalError("conflict", `the inventory moved (generation ${pre.record.generation} → ${base.record.generation}) after this writer read it`, {
        next: `${RERUN}   # re-reads and re-decides`,
      });
    }
    if (this.casDisabled) base = pre;
    const claimedOn = base;
    if (intent.op === "reconcile" && base.revision !== intent.expectRevision) {
      throw new CotalError("conflict", "the inventory changed since the state you confirmed was printed", { next: `${RERUN}   # prints the new state` });
    }
    return { base: await this.resume(base, keeper), claimedOn };
  }

  /** The delta against the clean record, or noop; a limits change of an unlisted space and an empty list refuse. */
  decide(base: VersionedRecord): Decision {
    const { intent } = this;
    if (intent.op === "resume") return { kind: "noop" }; // the resume ran in step 2; nothing else is asked
    const { added, removed } = intentDelta(base.record.spaces, requestedNames(intent));
    const resign = resignOf(intent);
    if (resign && !base.record.spaces.includes(resign.space)) {
      throw new CotalError("space-not-found", `space ${resign.space} is not in the inventory`, { next: "cotal space list" });
    }
    if (added.length === 0 && removed.length === 0 && intent.op !== "reconcile" && !resign) return { kind: "noop" };
    // The one derivation every reader of the claim uses (record.ts); the claim itself stores the delta.
    const target = claimedSpaces(base.record.spaces, { adds: added, removes: removed });
    if (target.length === 0) {
      throw new CotalError("render-refused", "this mutation would leave the broker with zero spaces", { next: "keep at least one space; to tear the broker down use `cotal down`" });
    }
    return { kind: "change", intent, base, added, removed, target };
  }

  /** Step 3: claim. From here the intent is durable and resumable. */
  async claim(base: VersionedRecord, d: Extract<Decision, { kind: "change" }>, keeper: LeaseKeeper): Promise<Claim> {
    const { env } = this;
    const { intent } = d;
    const pending: PendingMutation = {
      generation: base.record.generation + 1,
      op: intent.op,
      adds: d.added,
      removes: d.removed,
      writer: this.writer,
      leaseId: keeper.lease.leaseId,
      claimedAt: new Date().toISOString(),
      ...(intent.op === "reconcile" && intent.excluded ? { excluded: [...intent.excluded] } : {}),
      // Recorded before anything is minted, so a rollback deletes exactly these (docs/resume.md).
      ...(intent.op !== "reconcile" ? { mints: d.added.filter((s) => !loadSpaceAccount(env.layout, s)) } : {}),
      ...(resignOf(intent) ? { limits: resignOf(intent) } : {}),
    };
    const record: InventoryRecord = { ...base.record, pending };
    await failpoint("before-claim");
    const revision = await this.timed("claim", async () => {
      const rev = await this.cas(record, base.revision, "claim");
      this.claimed = pending.generation;
      return rev;
    });
    await failpoint("after-claim");
    return { generation: base.record.generation, added: d.added, removed: d.removed, target: d.target, pending, record, revision };
  }

  /**
   * Step 4: materialise (adds only; removal's record reaping happens after the commit; a reconcile
   * never creates, deletes or edits a record).
   */
  async materialise(c: Claim): Promise<void> {
    const { env, intent } = this;
    if (c.pending.limits) applyLimitsChange(env.layout, c.pending.limits); // space limits: its one record, undone by any rollback
    else if (intent.op !== "reconcile") await this.timed("materialise", () => materialiseAdds(env.layout, loadBrokerTrust(env.layout), c.added, intent.op === "add" || intent.op === "batch" ? intent.limits : undefined));
    await failpoint("after-materialise");
  }

  /**
   * Steps 5-7 through the one apply path (saga/apply.ts): render the claimed list, stage it and CAS its
   * digest, fence on the lease, rename, reload, prove and record the proof; then step 8, the commit.
   * Offline (no reloader) the claim stays promoted: the next `up` boots and commits it.
   */
  async applyAndCommit(c: Claim, keeper: LeaseKeeper, known: KnownRecords | undefined): Promise<MutationResult> {
    const { layout } = this.env;
    let digest = "";
    const applied = await applyConfig({
      target: layout.serverConf,
      staged: layout.stagedConf(c.pending.generation, c.pending.leaseId),
      config: () => {
        const r = renderList(layout, c.target, this.guards, known);
        digest = r.digest;
        return r.text;
      },
      // DISABLE_FENCE, the lease-expiry control cell: promotion skips the step-6 lease re-check.
      fence: { held: () => keeper.held(), unchecked: this.guards.DISABLE_FENCE, onLost: () => this.abandonClaim(c), lost: () => new CotalError("lease-lost", "the writer lease expired before promotion; nothing was promoted", { next: RERUN }) },
      keepPrevious: true,
      ...(this.env.reloader ? { reload: () => this.reload(c.pending) } : {}),
      record: (verdict) => this.recordForward(c, verdict),
      steps: {
        timed: (step, fn) => this.timed(step === "stage" ? "render-stage" : "promote", fn),
        staged: () => this.casStagedDigest(c, digest),
        afterStage: () => failpoint("after-stage"),
        beforeFence: () => failpoint("before-rename"),
        renamed: () => failpoint("after-rename"),
      },
    });
    // Offline (private broker): nothing runs this config yet. The claim stays pending with its
    // staged digest, which is exactly PROMOTED-BUT-UNCOMMITTED: the next `up` boots and commits it.
    if (applied.kind === "promoted") return this.result("promoted", c.generation, c.target, c.added, c.removed);
    if (!applied.proof) await this.rollbackAfterFailedReload(keeper, c, applied.previous as Buffer, applied.verdict);
    // Step 8: verify the running bytes and commit.
    const { record } = await this.commit(c.record, c.revision, c.pending);
    return this.result("committed", record.generation, record.spaces, c.added, c.removed);
  }

  /** Step 5's CAS: the staged digest is durable in the claim before anything is promoted. */
  async casStagedDigest(c: Claim, digest: string): Promise<void> {
    c.pending = { ...c.pending, stagedDigest: digest };
    c.record = { ...c.record, pending: c.pending };
    c.revision = await this.cas(c.record, c.revision, "stage");
  }

  /** Step 7's record: the proof CAS (the only writer of appliedGeneration); false when the reload proved nothing. */
  async recordForward(c: Claim, verdict: ReloadVerdict): Promise<boolean> {
    if (verdict.outcome !== "reloaded") return false;
    ({ record: c.record, revision: c.revision } = await recordProof(this.casWrite, { record: c.record, revision: c.revision }, c.pending, verdict));
    await failpoint("after-proof");
    return true;
  }

  /** The fence failed: the lease is gone, so it is not released; the claim, still ours if its CAS lands, is undone. */
  async abandonClaim(c: Claim): Promise<void> {
    this.releaseLease = false;
    try {
      await this.cas({ ...c.record, pending: null }, c.revision);
      // The claim was still ours, so nobody resumed it: what it minted or re-signed goes too.
      // (Had the CAS lost, another writer owns the record and rolls the claim back itself.)
      undoClaimFiles(this.env.layout, c.record, c.pending, this.guards);
    } catch {
      // Another holder may already have moved the record on; the staged file is gone either way.
    }
  }

  /** A reload that proved nothing: the previous (proven) bytes go back through the apply path, re-proven, and the claim is undone. */
  async rollbackAfterFailedReload(keeper: LeaseKeeper, c: Claim, previous: Buffer, verdict: ReloadVerdict): Promise<never> {
    const { layout } = this.env;
    const { pending } = c;
    const tail = "logTail" in verdict ? verdict.logTail : "";
    const leaseGone = (): CotalError =>
      new CotalError("reload-unproven", `the reload of generation ${pending.generation} was ${verdict.outcome}, and the lease is no longer held, so nothing is renamed back; the record keeps the claim for the next writer`, {
        next: `${RERUN}   # the resume table decides from the record`,
        details: { logTail: tail },
      });
    if (!(await keeper.held())) throw leaseGone();
    // Only the proven bytes go back: a server.conf edited by hand before this verb is no rollback target.
    if (configDigest(previous) !== c.record.configDigest) {
      throw new CotalError("reload-unproven", `the reload of generation ${pending.generation} was ${verdict.outcome}, and the config it replaced was not the proven one, so it is not renamed back; the claim stays for the next writer`, {
        next: "cotal broker reconcile   # prints the record and both lists; the next writer's resume also rolls a rejected config back",
        details: { logTail: tail },
      });
    }
    const back = await applyConfig({ target: layout.serverConf, config: () => previous, fence: { held: () => keeper.held(), lost: leaseGone }, reload: () => this.reload(), record: async (v) => v });
    if (back.verdict.outcome !== "reloaded") {
      throw new CotalError("reload-unproven", `the reload of generation ${pending.generation} was ${verdict.outcome}, and re-loading the previous config was ${back.verdict.outcome} too`, {
        next: `${RERUN}   # the resume table rolls the claim back; the broker log says why`,
        details: { logTail: tail },
      });
    }
    await rollbackUnpromoted(layout, this.casWrite, { record: c.record, revision: c.revision }, pending, this.guards);
    throw new CotalError("reload-unproven", `the broker ${verdict.outcome === "failed" ? "rejected" : "did not confirm"} the config of generation ${pending.generation}; the previous config was restored and proven, nothing changed:\n${tail}`, {
      next: `tail -n 40 ${layout.logFile}   # the server's reason; once fixed: ${RERUN}`,
      details: { logTail: tail, appliedGeneration: c.record.appliedGeneration },
    });
  }
}

/**
 * The mutation saga (docs/saga.md): read, lease, decide/resume, claim, materialise, stage, fence +
 * promote, prove, commit, release. A lost CAS re-reads and re-decides, at most `maxAttempts` times.
 */
export async function runMutation(env: SagaEnv, intent: MutationIntent, decided?: VersionedRecord, view?: DiskView): Promise<MutationResult> {
  const max = env.maxAttempts ?? 5;
  let conflicts = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      // Only the first attempt uses the verb's early read (and its view); a retry re-reads and re-decides.
      const r = await new Mutation(env, intent).attempt(attempt === 1 ? decided : undefined, attempt === 1 ? view : undefined);
      env.onAttempt?.({ op: intent.op, outcome: "ok" });
      return { ...r, attempts: attempt, conflicts };
    } catch (err) {
      env.onAttempt?.({ op: intent.op, outcome: isCotalError(err, "conflict") ? "conflict" : "error" });
      if (!isCotalError(err, "conflict") || attempt >= max || intent.op === "reconcile") {
        if (isCotalError(err, "conflict") && attempt > 1) {
          throw new CotalError("conflict", `${err.message} (gave up after ${attempt} attempts)`, { next: err.next ?? RERUN, cause: err });
        }
        throw err;
      }
      conflicts++;
      env.onNotice?.(`conflict: ${err.message}; re-reading and re-deciding (attempt ${attempt + 1}/${max})`);
    }
  }
}
