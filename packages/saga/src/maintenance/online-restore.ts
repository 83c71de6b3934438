/**
 * `cotal space restore <name> --from DIR` on a running broker (README: restore; docs/resume.md, the
 * quiesce entry): the backup's quiesce, then the artifact's streams restored through the running
 * broker as a user issued after it, verified against the manifest and checkpoints, then the lift.
 * `--replace --yes` deletes the tenant's streams the artifact names first, journaled before that.
 */
import { resolve } from "node:path";
import { jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SagaError, isSagaError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { connectAsAccount } from "../broker/connect.js";
import { selfOwner } from "../lock/process-identity.js";
import type { SessionHooks } from "../ops/session.js";
import { withLiveVerb } from "../ops/verb.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import { clusterOf, tenantReplicasOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import type { AccountRecord } from "../root/records.js";
import { assertJournalAllows, clearJournal, readJournal, restoreRerun, writeJournal, type QuiesceEntry } from "./journal.js";
import { unsafe } from "../unsafe.js";
import { verifyArtifact, type BackupManifest } from "./artifact.js";
import { newAttemptId } from "./attempt.js";
import { PhaseClock, type PhaseTiming } from "./phase-clock.js";
import { quiesceTenant, recoverQuiesce, issuedAfter, setQuiesceStage, updateQuiesce, type QuiesceRecovery, liftTenant } from "./quiesce.js";
import type { SpaceRestoreOptions, SpaceRestoreResult } from "./backup-contract.js";
import { readRestoreReceipt, writeRestoreReceipt } from "./restore-receipt.js";
import { deleteStreams, installArtifactStreams, listStreams, replaceable, targetNotEmpty } from "./restore-streams.js";
import type { StreamState } from "./stream-snapshot.js";

/** What the restore user may do: list, inspect, delete and restore streams, create the ttl buckets, read consumers. */
export const RESTORE_USER_PERMISSIONS = {
  allowPub: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.RESTORE.*", "$JS.API.STREAM.CREATE.*", "$JS.API.CONSUMER.INFO.*.*", "$JS.API.CONSUMER.LIST.*", "$JS.SNAPSHOT.RESTORE.>"],
  allowSub: ["_INBOX.>"],
};

export interface OnlineRestoreOptions extends SpaceRestoreOptions, SessionHooks {
  /** Restore over the tenant's streams the artifact names (deleted first); needs `yes`. */
  replace?: boolean;
  yes?: boolean;
}

export interface OnlineRestoreResult extends SpaceRestoreResult {
  mode: "online";
  /** The tenant's streams --replace deleted (or a stopped restore's partial streams this re-run deleted). */
  replaced: string[];
  /** Epoch ms: the quiesce proven, the last stream verified, the lift proven. */
  timeline: { quiesceProvenAt: number; restoredAt: number; liftProvenAt: number };
  /** A stopped online backup or restore this run lifted or took over first. */
  recovered?: QuiesceRecovery | { took: QuiesceEntry["stage"]; attemptId: string };
  /** The request's receipt was found: it had restored already (verified at this epoch ms); nothing was done now. */
  alreadyRestored?: number;
  /** Where the time went, phase by phase, with the quiesce's and the lift's saga steps (BENCHMARKS.md). */
  phases: PhaseTiming[];
}

/** The artifact's streams the namespace holds with data (a fresh space's empty template streams do not count). */
function occupiedBy(existing: readonly StreamInfo[], m: BackupManifest): StreamInfo[] {
  const names = new Set(m.streams.map((s) => s.name));
  const ttl = m.excluded.map((e) => e.name);
  return existing.filter((i) => names.has(i.config.name) && !replaceable(i, m.space, ttl));
}

/** Test-only switch for the not-empty guard's cell: restore over the tenant's data as if --replace were given. */
function overDataAllowed(): boolean {
  return unsafe("RESTORE_OVER_DATA");
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
async function withRestoreUser<T>(url: string, account: AccountRecord, fn: (nc: NatsConnection, jsm: JetStreamManager) => Promise<T>, quiescedAt?: number, clock?: PhaseClock): Promise<T> {
  const nc = await connectAsAccount(url, account, { name: `cotal-restore-${account.name}`, reconnect: false, ttlSeconds: 3600, permissions: RESTORE_USER_PERMISSIONS, ...(quiescedAt !== undefined ? { issuedAt: issuedAfter(quiescedAt) } : {}) });
  try {
    const jsm = await jetstreamManager(nc);
    clock?.lap("restore user connect");
    return await fn(nc, jsm);
  } finally {
    await nc.close().catch(() => undefined);
    clock?.lap("restore user close");
  }
}

export async function spaceRestoreOnline(opts: OnlineRestoreOptions): Promise<OnlineRestoreResult> {
  const clock = new PhaseClock();
  const result = await restoreOnline(opts, clock);
  clock.lap("session close");
  return { ...result, phases: clock.laps };
}

async function restoreOnline(opts: OnlineRestoreOptions, clock: PhaseClock): Promise<Omit<OnlineRestoreResult, "phases">> {
  const space = assertSpaceName(opts.space);
  const from = resolve(opts.from);
  const layout = new RootLayout(canonicalRoot(opts.root));
  const progress = opts.onProgress ?? (() => undefined);
  const overData = overDataAllowed();
  const flags = `${opts.rebindAccount ? " --rebind-account" : ""}${opts.replace ? " --replace --yes" : ""}`;
  const rerun = `cotal space restore ${space} --from ${from}${flags}`;
  assertJournalAllows(layout, { verb: "space restore", restoreOf: space }); // a standing removal names itself before any input check
  if (opts.replace && !opts.yes) {
    throw new SagaError("confirmation-required", `--replace deletes space ${space}'s streams that the backup at ${from} holds, then restores them from it; confirm with --yes`, { next: `cotal space restore ${space} --from ${from}${opts.rebindAccount ? " --rebind-account" : ""} --replace --yes` });
  }
  // Read-only verification first: a truncated or tampered artifact refuses before any write.
  const { manifest, checkpoints } = verifyArtifact(from, (n) => progress({ phase: "verify", done: n, total: n }));
  if (manifest.space !== space) {
    throw new SagaError("artifact-invalid", `${from} is a backup of space ${manifest.space}, not ${space}`, { next: `cotal space restore ${manifest.space} --from ${from}` });
  }
  const verb = { root: layout.root, purpose: `cotal space restore ${space}`, journal: { verb: "space restore", restoreOf: space }, lockWaitMs: opts.lockWaitMs ?? 30_000, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) };
  clock.lap("artifact verify");
  return withLiveVerb(verb, async ({ lock, session, journal, disk }) => {
    clock.lap("session open, lock, preamble");
    const base = session.envWith(lock);
    const env = { ...base, onTiming: (s: Parameters<PhaseClock["step"]>[0], ms: number) => (clock.step(s, ms), base.onTiming?.(s, ms)) };
    let recovered: OnlineRestoreResult["recovered"];
    // A stopped restore of this space that changed the namespace: its partial streams are ours to replace, under its quiesce.
    let inherited: QuiesceEntry | undefined;
    if (journal?.op === "quiesce" && journal.purpose === "restore" && journal.stage !== "unfinished") {
      inherited = journal;
      recovered = { took: journal.stage, attemptId: journal.attemptId };
    } else if (journal?.op === "quiesce" && journal.purpose === "backup") {
      recovered = await recoverQuiesce(env, journal, "space restore", session.url);
      opts.onNotice?.(`lifted the quiesce of space ${journal.space} left by backup ${journal.attemptId} (${journal.stage})`);
    }
    const account = disk.find((t) => t.name === space);
    if (!account) {
      throw new SagaError("space-not-found", `space ${space} does not exist on ${layout.root}; restore fills an existing space`, { next: `cotal space add ${space}   # then restore again` });
    }
    const kv = await session.store.read();
    if (!kv?.record.spaces.includes(space)) throw new SagaError("space-not-found", `space ${space} is not in the inventory`, { next: "cotal space list" });
    const pinned = manifest.accountPublicKey;
    if (pinned !== account.publicKey && !opts.rebindAccount) {
      throw new SagaError("account-mismatch", `the backup pins account ${pinned} for space ${space}, but ${space} is now account ${account.publicKey}`, {
        next: `cotal space restore ${space} --from ${from} --rebind-account${opts.replace ? " --replace --yes" : ""}   # if the new account is meant to receive this data`,
        details: { artifactAccount: pinned, currentAccount: account.publicKey },
      });
    }
    const names = manifest.streams.map((s) => s.name);
    // A re-delivered request that restored already (its receipt, restore-receipt.ts) with no entry
    // of this space standing does nothing: restoring again would delete what the tenant wrote since.
    const receipt = opts.requestId && !unsafe("IGNORE_RESTORE_RECEIPT") ? readRestoreReceipt(layout, opts.requestId, space) : undefined;
    if (receipt && !inherited) {
      opts.onNotice?.(`request ${opts.requestId} restored space ${space} already (attempt ${receipt.attemptId}); nothing to do`);
      const at = receipt.verifiedAt;
      return { ...resultOf(manifest, from, account, receipt.attemptId), replaced: [], timeline: { quiesceProvenAt: at, restoredAt: at, liftProvenAt: at }, alreadyRestored: at, ...(recovered ? { recovered } : {}) };
    }
    const receiptFor = (attemptId: string) => {
      if (opts.requestId) writeRestoreReceipt(layout, lock, { request: opts.requestId, space, from, attemptId, verifiedAt: Date.now() });
    };
    if (inherited && (inherited.stage === "verified" || inherited.stage === "lifting")) {
      // The stopped restore had verified every stream: only its lift was owed.
      receiptFor(inherited.attemptId);
      const done = await recoverQuiesce(env, inherited, "space restore", session.url);
      const now = Date.now();
      return { ...resultOf(manifest, from, account, inherited.attemptId), replaced: [], timeline: { quiesceProvenAt: now, restoredAt: now, liftProvenAt: now }, recovered: done };
    }
    const takeOver = inherited !== undefined && (inherited.stage === "deleting" || inherited.stage === "restoring" || inherited.replace?.deletionBegan === true);
    // Refuse before the quiesce where we can: a refusal evicts nobody (the same check runs again once quiesced).
    if (!inherited) {
      clock.lap("inventory read");
      const occupied = await withRestoreUser(session.url, account, async (_nc, jsm) => occupiedBy(await listStreams(jsm), manifest));
      clock.lap("pre-quiesce occupancy check");
      if (occupied.length > 0 && !opts.replace && !overData) {
        throw targetNotEmpty(space, occupied, `cotal space restore ${space} --from ${from}${opts.rebindAccount ? " --rebind-account" : ""} --replace --yes   # deletes those streams, then restores the backup`);
      }
    }

    const attemptId = newAttemptId();
    const installed = new Map<string, StreamState>();
    const replace = opts.replace === true || takeOver || overData;
    const entry: QuiesceEntry = {
      op: "quiesce", space, purpose: "restore", out: from, streams: names, attemptId, owner: selfOwner(), startedAt: new Date().toISOString(),
      // taking over a namespace a stopped restore changed: it stays "changed" for a recovery from the first write
      stage: takeOver ? "restoring" : "journaled",
      ...(replace ? { replace: { streams: names, deletionBegan: inherited?.replace?.deletionBegan ?? false } } : {}),
      ...(opts.rebindAccount ? { rebindAccount: true } : {}),
    };
    writeJournal(layout, lock, entry); // before the quiesce and before any deletion
    clock.lap("journal");
    await failpoint("restore-online-journaled");
    try {
      const q = await quiesceTenant(env, session.url, account, "space restore", `${rerun}   # run it again`, clock);
      if (entry.stage === "journaled") setQuiesceStage(layout, lock, attemptId, "quiesced");
      await failpoint("restore-online-quiesced");
      const replaced = await withRestoreUser(session.url, account, async (nc, jsm) => {
        const existing = await listStreams(jsm);
        clock.lap("stream list");
        const occupied = occupiedBy(existing, manifest);
        if (occupied.length > 0 && !replace) {
          throw targetNotEmpty(space, occupied, `cotal space restore ${space} --from ${from}${opts.rebindAccount ? " --rebind-account" : ""} --replace --yes   # deletes those streams, then restores the backup`);
        }
        // The deletion is journaled as begun before the first stream goes: a crash after it is only finished by the re-run.
        const doomed = existing.filter((i) => names.includes(i.config.name) && (replace || replaceable(i, space, manifest.excluded.map((e) => e.name))));
        if (replace && doomed.length > 0) updateQuiesce(layout, lock, attemptId, { stage: "deleting", replace: { streams: names, deletionBegan: true } });
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
          verifyFailed: (why) => new SagaError("restore-verify-failed", `the online restore of space ${space} did not reproduce the artifact: ${why}`, { next: `${rerun}   # run it again`, details: { reason: why } }),
          replicas: tenantReplicasOf(clusterOf(layout, loadSettings(layout))),
          ...(opts.upload ? { upload: opts.upload } : {}),
        });
        clock.lap("restore and verify");
        return gone;
      }, q.t, clock);
      const restoredAt = Date.now();
      receiptFor(attemptId); // still quiesced: no tenant write falls between the restore and its receipt
      setQuiesceStage(layout, lock, attemptId, "verified");
      await failpoint("restore-online-verified");
      clock.lap("receipt, journal");
      const liftProvenAt = await liftTenant(env, lock, attemptId, space, "space restore", clock);
      await failpoint("restore-online-lifted");
      clearJournal(layout, lock); // only after the lift's proof
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
        ...(recovered ? { recovered } : {}),
      };
    } catch (err) {
      // Fail closed to lifted: a changed namespace is emptied of the partial streams; a --replace past its deletion stays journaled.
      const standing = readJournal(layout);
      let after: QuiesceRecovery | undefined;
      if (standing?.op === "quiesce" && standing.attemptId === attemptId) {
        try {
          after = await recoverQuiesce(env, standing, "space restore", session.url);
        } catch (liftErr) {
          throw new SagaError("journal-blocked", `the online restore of space ${space} failed (${(err as Error).message}) and its recovery failed too (${(liftErr as Error).message}); the tenant stays quiesced`, { next: `${rerun}   # or cotal up, which lifts it`, cause: err });
        }
      }
      const tail = after?.unfinished ? `; its old streams were already deleted: re-run to restore the backup` : "; the tenant was lifted with its data as before";
      if (isSagaError(err)) {
        throw new SagaError(err.code, `${err.message}${tail}`, { next: err.code === "restore-target-not-empty" ? err.next : after?.unfinished ? `${restoreRerun(standing as QuiesceEntry)}   # finishes the restore` : (err.next ?? rerun), ...(err.details ? { details: err.details } : {}), cause: err });
      }
      throw new SagaError("restore-verify-failed", `the online restore of space ${space} failed: ${(err as Error).message}${tail}`, { next: `${rerun}   # run it again`, cause: err });
    }
  });
}
