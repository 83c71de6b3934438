/**
 * `cotal space restore <name> --from DIR` on a running broker (docs/backup.md; docs/resume.md, the
 * quiesce entry). Before anything changes: the artifact verified, the namespace empty (or --replace
 * naming what goes), the artifact fitting the tenant's quota and the safety copy's disk. Then the
 * tenant quiesced, a safety copy of every stream --replace deletes, the deletion, the artifact's
 * streams restored and verified, the lift. A failure or a kill anywhere ends with the tenant's old
 * data (the safety copy put back) or the new, never less (restore-safety.ts).
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { resolve } from "node:path";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { RERUN, CotalError, isCotalError, rerunWith } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { connectAsAccount } from "../broker/connect.js";
import { selfOwner } from "../lock/process-identity.js";
import type { SessionHooks } from "../verb/session.js";
import { withLiveVerb, type LiveVerbContext } from "../verb/verb.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import { clusterOf, tenantReplicasOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import type { AccountRecord } from "../root/records.js";
import type { SagaEnv } from "../saga/mutation.js";
import { assertJournalAllows, clearJournal, readJournal, restoreRerun, writeJournal, type JournalEntry, type QuiesceEntry } from "../journal/journal.js";
import type { BackupManifest, Checkpoints } from "./artifact.js";
import { verifyRestoreFrom } from "./artifact-paths.js";
import { newAttemptId } from "./attempt.js";
import { PhaseClock, type PhaseTiming } from "./phase-clock.js";
import { quiesceTenant, recoverQuiesce, issuedAfter, setQuiesceStage, updateQuiesce, type QuiesceRecovery, liftTenant } from "./quiesce.js";
import type { SpaceRestoreOptions, SpaceRestoreResult } from "./backup-contract.js";
import { readRestoreReceipt, writeRestoreReceipt } from "./restore-receipt.js";
import { assertRestoreFits, occupiedStreams } from "./restore-checks.js";
import { REPLACE_USER_PERMISSIONS, assertRoomForSafety, dropSafety, safetyDirOf, takeSafety } from "./restore-safety.js";
import { deleteStreams, installArtifactStreams, listStreams, replaceable, targetNotEmpty } from "./restore-streams.js";
import type { StreamState } from "./stream-snapshot.js";

/** What the restore user may do: list, inspect, delete and restore streams, create the ttl buckets, read consumers and the account's usage. */
export const RESTORE_USER_PERMISSIONS = {
  allowPub: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.RESTORE.*", "$JS.API.STREAM.CREATE.*", "$JS.API.CONSUMER.INFO.*.*", "$JS.API.CONSUMER.LIST.*", "$JS.SNAPSHOT.RESTORE.>"],
  allowSub: ["_INBOX.>"],
};

export interface OnlineRestoreOptions extends SpaceRestoreOptions, SessionHooks {
  /** Restore over the tenant's streams the artifact names (kept in a safety copy, then deleted); needs `yes`. */
  replace?: boolean;
  yes?: boolean;
}

export interface OnlineRestoreResult extends SpaceRestoreResult {
  mode: "online";
  /** The tenant's streams --replace deleted (or a stopped restore's partial streams this re-run deleted). */
  replaced: string[];
  /** Epoch ms: the quiesce proven, the last stream verified, the lift proven. */
  timeline: { quiesceProvenAt: number; restoredAt: number; liftProvenAt: number };
  /** A stopped online backup or restore this run lifted, put back or took over first. */
  recovered?: QuiesceRecovery | { took: QuiesceEntry["stage"]; attemptId: string };
  /** The request's receipt was found: it had restored already (verified at this epoch ms); nothing was done now. */
  alreadyRestored?: number;
  /** Where the time went, phase by phase, with the quiesce's and the lift's saga steps (BENCHMARKS.md). */
  phases: PhaseTiming[];
}

function resultOf(m: BackupManifest, from: string, account: AccountRecord, attemptId: string): Omit<OnlineRestoreResult, "replaced" | "timeline" | "recovered" | "phases"> {
  return {
    mode: "online",
    space: m.space,
    from,
    attemptId,
    accountPublicKey: account.publicKey,
    artifactAccountPublicKey: m.accountPublicKey,
    rebound: m.accountPublicKey !== account.publicKey,
    streams: m.streams.map((s) => ({ name: s.name, messages: s.state.messages, first_seq: s.state.first_seq, last_seq: s.state.last_seq, consumers: s.state.consumer_count })),
    recreatedEmpty: m.excluded.map((e) => e.name),
  };
}

/** `quiescedAt`: the quiesce's T, so the user is issued after it (quiesce.ts, issuedAfter). */
async function withRestoreUser<T>(url: string, account: AccountRecord, fn: (nc: NatsConnection, jsm: JetStreamManager) => Promise<T>, opts: { quiescedAt?: number; clock?: PhaseClock; permissions?: typeof RESTORE_USER_PERMISSIONS } = {}): Promise<T> {
  const nc = await connectAsAccount(url, account, { name: `cotal-restore-${account.name}`, reconnect: false, ttlSeconds: 3600, permissions: opts.permissions ?? RESTORE_USER_PERMISSIONS, ...(opts.quiescedAt !== undefined ? { issuedAt: issuedAfter(opts.quiescedAt) } : {}) });
  try {
    const jsm = await jetstreamManager(nc);
    opts.clock?.lap("restore user connect");
    return await fn(nc, jsm);
  } finally {
    await nc.close().catch(() => undefined);
    opts.clock?.lap("restore user close");
  }
}

/** The checked input of a restore: everything read-only, before the lock. */
interface RestoreInput {
  space: string;
  from: string;
  layout: RootLayout;
  manifest: BackupManifest;
  checkpoints: Checkpoints;
  opts: OnlineRestoreOptions;
  clock: PhaseClock;
  guards: Guards;
}

export async function spaceRestoreOnline(opts: OnlineRestoreOptions): Promise<OnlineRestoreResult> {
  const clock = new PhaseClock();
  const input = restoreInput(opts, clock);
  const verb = { root: input.layout.root, guards: input.guards, purpose: `cotal space restore ${input.space}`, journal: { verb: "space restore" as const, space: input.space }, lockWaitMs: opts.lockWaitMs ?? 30_000, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) };
  const result = await withLiveVerb(verb, (v) => restoreUnderLock(v, input));
  clock.lap("session close");
  return { ...result, phases: clock.laps };
}

function restoreInput(opts: OnlineRestoreOptions, clock: PhaseClock): RestoreInput {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const from = resolve(opts.from);
  const layout = new RootLayout(canonicalRoot(opts.root));
  assertJournalAllows(layout, { verb: "space restore", space }, guards); // a standing removal names itself before any input check
  if (opts.replace && !opts.yes) {
    throw new CotalError("confirmation-required", `--replace deletes space ${space}'s streams that the backup at ${from} holds (a safety copy is kept until the restore verifies), then restores them from it; confirm with --yes`, { next: rerunWith({ "--yes": true }) });
  }
  // Read-only verification first: a truncated or tampered artifact refuses before any write.
  const progress = opts.onProgress ?? (() => undefined);
  const { manifest, checkpoints } = verifyRestoreFrom(from, (n) => progress({ phase: "verify", done: n, total: n }));
  if (manifest.space !== space) {
    throw new CotalError("artifact-invalid", `${from} is a backup of space ${manifest.space}, not ${space}`, { next: `cotal --root ${layout.root} space restore ${manifest.space} --from ${from}` });
  }
  clock.lap("artifact verify");
  return { space, from, layout, manifest, checkpoints, opts, clock, guards };
}

/** A stopped restore or backup found in the journal: what this run does with it first. */
async function settlePrior(env: SagaEnv, journal: JournalEntry | undefined, input: RestoreInput, url: string): Promise<{ recovered?: OnlineRestoreResult["recovered"]; inherited?: QuiesceEntry }> {
  if (journal?.op !== "quiesce") return {};
  const finished = journal.stage === "verified" || journal.stage === "lifting";
  // A restore from before safety copies, cut past its deletion: its namespace is ours to finish (the old way).
  const legacyTakeOver = journal.purpose === "restore" && !journal.safety && journal.stage !== "unfinished";
  if (journal.purpose === "restore" && (finished || legacyTakeOver)) return { inherited: journal, recovered: { took: journal.stage, attemptId: journal.attemptId } };
  if (journal.purpose === "restore" && journal.stage === "unfinished") return {};
  // A stopped backup, or a restore with a safety copy: recovered to the tenant's old state first (put back and lifted).
  const recovered = await recoverQuiesce(env, journal, "space restore", url);
  input.opts.onNotice?.(`recovered the stopped ${journal.purpose} of space ${journal.space} (${journal.attemptId}, ${journal.stage})${recovered.putBack ? `: put back ${recovered.putBack.join(", ")}` : ""}`);
  return { recovered };
}

/** The space exists here and the artifact's account is its own (or --rebind-account accepted it). */
async function requireAccount(v: LiveVerbContext, input: RestoreInput): Promise<AccountRecord> {
  const { space, layout, manifest, opts } = input;
  const account = v.disk.find((t) => t.name === space);
  if (!account) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}; restore fills an existing space`, { next: `cotal --root ${layout.root} space add ${space} && ${RERUN}` });
  const kv = await v.session.store.read();
  if (!kv?.record.spaces.includes(space)) throw new CotalError("space-not-found", `space ${space} is not in the inventory`, { next: `cotal --root ${layout.root} space list` });
  if (manifest.accountPublicKey !== account.publicKey && !opts.rebindAccount) {
    throw new CotalError("account-mismatch", `the backup pins account ${manifest.accountPublicKey} for space ${space}, but ${space} is now account ${account.publicKey}`, {
      next: `${rerunWith({ "--rebind-account": true })}   # if the new account is meant to receive this data`,
      details: { artifactAccount: manifest.accountPublicKey, currentAccount: account.publicKey },
    });
  }
  return account;
}

/**
 * The checks before the point of no return, read-only, the tenant untouched: an empty namespace
 * unless --replace; the artifact within the tenant's quota once the replaced streams are gone; room
 * on the root's disk for the safety copy.
 */
async function preflight(url: string, account: AccountRecord, input: RestoreInput): Promise<void> {
  const { manifest, opts, layout, space, guards } = input;
  const replicas = tenantReplicasOf(clusterOf(layout, loadSettings(layout))) ?? 1;
  await withRestoreUser(url, account, async (_nc, jsm) => {
    const existing = await listStreams(jsm);
    const occupied = occupiedStreams(existing, manifest);
    // RESTORE_OVER_DATA: the not-empty guard's cell, restore over the tenant's data as if --replace were given.
    if (occupied.length > 0 && !opts.replace && !guards.RESTORE_OVER_DATA) {
      throw targetNotEmpty(space, occupied, `${rerunWith({ "--replace": true, "--yes": true })}   # keeps a safety copy of those streams, deletes them, then restores the backup`);
    }
    const info = await jsm.getAccountInfo();
    if (!guards.RESTORE_SKIP_QUOTA_CHECK) assertRestoreFits(info, existing, manifest, replicas, (flag, value) => `cotal --root ${layout.root} space limits ${space} ${flag} ${value} && ${RERUN}`);
    if (opts.replace) {
      const named = new Set(manifest.streams.map((s) => s.name));
      assertRoomForSafety(layout, existing.filter((i) => named.has(i.config.name)), `${RERUN}   # once ${layout.root}'s file system has the room`);
    }
  }, { clock: input.clock });
  input.clock.lap("checks before the quiesce");
}

async function restoreUnderLock(v: LiveVerbContext, input: RestoreInput): Promise<Omit<OnlineRestoreResult, "phases">> {
  const { space, from, layout, manifest, opts, clock } = input;
  const { lock, session } = v;
  clock.lap("session open, lock, preamble");
  const base = session.envWith(lock);
  const env: SagaEnv = { ...base, onTiming: (s, ms) => (clock.step(s, ms), base.onTiming?.(s, ms)) };
  const { recovered, inherited } = await settlePrior(env, v.journal, input, session.url);
  const account = await requireAccount(v, input);
  // A re-delivered request that restored already (its receipt, restore-receipt.ts) with no entry
  // of this space standing does nothing: restoring again would delete what the tenant wrote since.
  const receipt = opts.requestId && !v.guards.IGNORE_RESTORE_RECEIPT ? readRestoreReceipt(layout, opts.requestId, space) : undefined;
  if (receipt && !inherited) {
    opts.onNotice?.(`request ${opts.requestId} restored space ${space} already (attempt ${receipt.attemptId}); nothing to do`);
    const at = receipt.verifiedAt;
    return { ...resultOf(manifest, from, account, receipt.attemptId), replaced: [], timeline: { quiesceProvenAt: at, restoredAt: at, liftProvenAt: at }, alreadyRestored: at, ...(recovered ? { recovered } : {}) };
  }
  if (inherited && (inherited.stage === "verified" || inherited.stage === "lifting")) {
    // The stopped restore had verified every stream: only its lift was owed.
    if (opts.requestId) writeRestoreReceipt(layout, lock, { request: opts.requestId, space, from, attemptId: inherited.attemptId, verifiedAt: Date.now() });
    const done = await recoverQuiesce(env, inherited, "space restore", session.url);
    const now = Date.now();
    return { ...resultOf(manifest, from, account, inherited.attemptId), replaced: [], timeline: { quiesceProvenAt: now, restoredAt: now, liftProvenAt: now }, recovered: done };
  }
  if (!inherited) await preflight(session.url, account, input);
  const takeOver = inherited !== undefined && (inherited.stage === "deleting" || inherited.stage === "restoring" || inherited.replace?.deletionBegan === true);
  const attemptId = newAttemptId();
  const names = manifest.streams.map((s) => s.name);
  const replace = opts.replace === true || takeOver || v.guards.RESTORE_OVER_DATA;
  const entry: QuiesceEntry = {
    op: "quiesce", space, purpose: "restore", out: from, streams: names, attemptId, owner: selfOwner(), startedAt: new Date().toISOString(),
    // taking over a namespace a stopped restore changed: it stays "changed" for a recovery from the first write
    stage: takeOver ? "restoring" : "journaled",
    ...(replace ? { replace: { streams: names, deletionBegan: inherited?.replace?.deletionBegan ?? false } } : {}),
    ...(takeOver ? {} : { safety: { dir: safetyDirOf(layout, attemptId), complete: false } }),
    ...(opts.rebindAccount ? { rebindAccount: true } : {}),
  };
  writeJournal(layout, lock, entry); // before the quiesce and before any deletion
  clock.lap("journal");
  await failpoint("restore-online-journaled");
  try {
    return { ...(await restoreQuiesced({ input, env, v, account, entry, replace })), ...(recovered ? { recovered } : {}) };
  } catch (err) {
    throw await failClosed(err, { input, env, v, attemptId });
  }
}

interface QuiescedStep {
  input: RestoreInput;
  env: SagaEnv;
  v: LiveVerbContext;
  account: AccountRecord;
  entry: QuiesceEntry;
  replace: boolean;
}

/** The tenant quiesced: its safety copy, the deletion, the artifact installed and verified, the receipt, the lift. */
async function restoreQuiesced({ input, env, v, account, entry, replace }: QuiescedStep): Promise<Omit<OnlineRestoreResult, "phases" | "recovered">> {
  const { space, from, layout, manifest, checkpoints, opts, clock } = input;
  const { lock, session } = v;
  const { attemptId } = entry;
  const progress = opts.onProgress ?? (() => undefined);
  const installed = new Map<string, StreamState>();
  const q = await quiesceTenant(env, session.url, account, "space restore", `${RERUN}   # run it again`, clock);
  if (entry.stage === "journaled") setQuiesceStage(layout, lock, attemptId, "quiesced");
  await failpoint("restore-online-quiesced");
  const replaced = await withRestoreUser(session.url, account, async (nc, jsm) => {
    const existing = await listStreams(jsm);
    clock.lap("stream list");
    const occupied = occupiedStreams(existing, manifest);
    if (occupied.length > 0 && !replace) throw targetNotEmpty(space, occupied, `${rerunWith({ "--replace": true, "--yes": true })}   # keeps a safety copy of those streams, deletes them, then restores the backup`);
    const ttl = manifest.excluded.map((e) => e.name);
    const doomed = existing.filter((i) => manifest.streams.some((s) => s.name === i.config.name) && (replace || replaceable(i, space, ttl)));
    // Every stream the restore deletes is copied first, a fresh template stream too: put back, the tenant has all it had.
    if (entry.safety && doomed.length > 0 && !v.guards.RESTORE_WITHOUT_SAFETY_COPY) {
      await takeSafety(nc, jsm, entry.safety.dir, doomed, { space, accountPublicKey: account.publicKey, attemptId }, progress, v.guards);
      updateQuiesce(layout, lock, attemptId, { safety: { dir: entry.safety.dir, complete: true } });
      clock.lap("safety copy");
    }
    // The deletion is journaled as begun before the first stream goes: a kill after it is put back (or, without a copy, finished by the re-run).
    if (replace && doomed.length > 0) updateQuiesce(layout, lock, attemptId, { stage: "deleting", replace: { streams: manifest.streams.map((s) => s.name), deletionBegan: true } });
    else if (doomed.length > 0) setQuiesceStage(layout, lock, attemptId, "deleting");
    if (doomed.length > 0) await failpoint("restore-online-deletion-began");
    const gone = await deleteStreams(jsm, doomed.map((i) => i.config.name));
    await failpoint("restore-online-deleted");
    clock.lap("deletion");
    setQuiesceStage(layout, lock, attemptId, "restoring");
    await installArtifactStreams(nc, jsm, from, manifest, checkpoints, progress, {
      phase: "online",
      onInstalled: (name, st) => installed.set(name, st),
      streamFailpoint: "restore-online-stream",
      installedFailpoint: "restore-online-installed",
      verifyFailed: (why) => new CotalError("restore-verify-failed", `the online restore of space ${space} did not reproduce the artifact: ${why}`, { next: `${RERUN}   # run it again`, details: { reason: why } }),
      replicas: tenantReplicasOf(clusterOf(layout, loadSettings(layout))),
      ...(opts.upload ? { upload: opts.upload } : {}),
    });
    clock.lap("restore and verify");
    return gone;
  }, { quiescedAt: q.t, clock, permissions: REPLACE_USER_PERMISSIONS });
  const restoredAt = Date.now();
  // Still quiesced: no tenant write falls between the restore and its receipt.
  if (opts.requestId) writeRestoreReceipt(layout, lock, { request: opts.requestId, space, from, attemptId, verifiedAt: Date.now() });
  setQuiesceStage(layout, lock, attemptId, "verified");
  await failpoint("restore-online-verified");
  clock.lap("receipt, journal");
  const liftProvenAt = await liftTenant(env, lock, attemptId, space, "space restore", clock);
  await failpoint("restore-online-lifted");
  clearJournal(layout, lock); // only after the lift's proof
  if (entry.safety) dropSafety(entry.safety.dir);
  await failpoint("restore-online-done");
  const base = resultOf(manifest, from, account, attemptId);
  return {
    ...base,
    // What came back, exactly (a live artifact's stream may hold more than its start state: artifact.ts grewTo).
    streams: base.streams.map((x) => {
      const st = installed.get(x.name);
      return st ? { name: x.name, messages: st.messages, first_seq: st.first_seq, last_seq: st.last_seq, consumers: st.consumer_count } : x;
    }),
    replaced,
    timeline: { quiesceProvenAt: q.provenAt, restoredAt, liftProvenAt },
  };
}

/**
 * A failed restore fails closed: this attempt's entry is recovered (the safety copy put back, a partial
 * restore dropped, the tenant lifted) and the error says what the tenant has now. When the broker
 * cannot be reached for that, the entry stays for `cotal up`, which does the same.
 */
async function failClosed(err: unknown, ctx: { input: RestoreInput; env: SagaEnv; v: LiveVerbContext; attemptId: string }): Promise<CotalError> {
  const { input, env, v, attemptId } = ctx;
  const { space, layout } = input;
  const standing = readJournal(input.layout);
  let after: QuiesceRecovery | undefined;
  if (standing?.op === "quiesce" && standing.attemptId === attemptId) {
    try {
      after = await recoverQuiesce(env, standing, "space restore", v.session.url);
    } catch (recoveryErr) {
      return new CotalError("broker-unreachable", `the online restore of space ${space} failed (${(err as Error).message}) and the broker could not be reached to put the tenant back (${(recoveryErr as Error).message}); its entry stays journaled, with its safety copy`, {
        next: `cotal --root ${layout.root} up --detach && ${RERUN}   # up puts the tenant's streams back and lifts it`,
        cause: err,
      });
    }
  }
  const tail = after?.putBack ? `; the tenant's own streams (${after.putBack.join(", ")}) were put back from the safety copy and it was lifted` : after?.unfinished ? "; its old streams were already deleted: re-run to restore the backup" : "; nothing of the tenant's was deleted, and it was lifted as it was";
  if (isCotalError(err)) {
    const next = err.code === "restore-target-not-empty" ? err.next : after?.unfinished ? `${restoreRerun(standing as QuiesceEntry)}   # finishes the restore` : err.next ?? RERUN;
    return new CotalError(err.code, `${err.message}${tail}`, { ...(next ? { next } : {}), ...(err.details ? { details: err.details } : {}), cause: err });
  }
  return new CotalError("restore-verify-failed", `the online restore of space ${space} failed: ${(err as Error).message}${tail}`, { next: `${RERUN}   # run it again`, cause: err });
}
