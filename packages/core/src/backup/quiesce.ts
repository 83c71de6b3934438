/**
 * The quiesce of one tenant for an online backup (README: backup): its account JWT re-signed with
 * `revocations["*"] = T`, which makes nats-server evict and refuse every user of the account issued
 * at or before T, and the lift that re-signs it without. Both go through the saga's one-account
 * re-sign (op "limits", docs/resume.md), so each is claimed, reloaded and proven like `space limits`.
 */
import { GUARDS_ON } from "../guards.js";
import { type Guards } from "../guards.js";
import { existsSync, lstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CotalError } from "../errors.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { openLiveSession, type LiveSession } from "../verb/session.js";
import { certainInventory } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { recordRevokeAllBefore, type AccountRecord } from "../root/records.js";
import { resignSource, settledRecord } from "../saga/resign-base.js";
import { clearJournal, readJournal, standingQuiesce, writeJournal, type QuiesceEntry, type QuiesceStage } from "../journal/journal.js";
import { runMutation, type SagaEnv } from "../saga/mutation.js";
import { resignAccountRevocations, revokeAllBefore } from "../trust/account.js";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectAsAccount } from "../broker/connect.js";
import { evictAccountConnections } from "../broker/evict-connections.js";
import { MANIFEST_FILE } from "./artifact.js";
import { deleteStreams } from "./restore-streams.js";
import type { PhaseClock } from "./phase-clock.js";
import { REPLACE_USER_PERMISSIONS, dropSafety, putBackSafety } from "./restore-safety.js";
import { clusterOf, tenantReplicasOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";

/**
 * The `iat` of cotal's own user in a quiesced namespace: nats-server revokes a user issued at or
 * before `revocations["*"]` and never compares an iat with its clock (only exp and nbf), so ours is
 * dated the second after T and connects at once, instead of waiting up to a second for the clock
 * to pass T (BENCHMARKS.md: that wait was the largest fixed part). The tenant's users keep their iat.
 */
export function issuedAfter(t: number): number {
  return Math.max(t + 1, Math.floor(Date.now() / 1000));
}

/**
 * The quiesce both online verbs share: `revocations["*"] = now` proven through the saga, then the
 * evictor (2.10+) confirms no client is left. Refuses `live-process` (the caller lifts) on a survivor.
 */
export async function quiesceTenant(env: SagaEnv, url: string, account: AccountRecord, verb: string, next: string, clock?: PhaseClock): Promise<{ t: number; provenAt: number; eviction: { outcome: string; kicked: number; reason?: string } }> {
  const t = Math.floor(Date.now() / 1000);
  clock?.enter("quiesce saga");
  await resignRevocations(env, account.name, t, `${verb} (quiesce)`);
  clock?.lap("quiesce saga");
  const provenAt = Date.now();
  const ev = await evictAccountConnections(env.layout, url, account.publicKey, env.guards);
  clock?.lap("eviction check");
  if (ev.outcome === "failed") {
    throw new CotalError("live-process", `space ${account.name} still has ${ev.remaining} connection(s) after its quiesce (${ev.reason ?? "unknown"}); nothing was changed`, { next });
  }
  return { t, provenAt, eviction: { outcome: ev.outcome, kicked: ev.kicked.length, ...(ev.reason ? { reason: ev.reason } : {}) } };
}

/** What a recovery's user may do in a quiesced namespace: list and delete streams. */
const RECOVERY_USER_PERMISSIONS = { allowPub: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.DELETE.*"], allowSub: ["_INBOX.>"] };

/** Deletes the artifact's streams a stopped restore may have half installed, as a user issued after the quiesce. */
async function dropPartialRestore(env: SagaEnv, url: string, entry: QuiesceEntry): Promise<string[]> {
  const { rec } = resignSource(env.layout, entry.space);
  const t = revokeAllBefore(rec.jwt);
  const nc = await connectAsAccount(url, rec, { name: `cotal-restore-recovery-${entry.space}`, reconnect: false, ttlSeconds: 600, permissions: RECOVERY_USER_PERMISSIONS, ...(t !== undefined ? { issuedAt: issuedAfter(t) } : {}) });
  try {
    return await deleteStreams(await jetstreamManager(nc), entry.streams ?? []);
  } finally {
    await nc.close();
  }
}


/** Re-signs `space`'s account JWT with `revokeAllBefore` (undefined: removed) through the saga; a no-op when it already carries that. */
export async function resignRevocations(env: SagaEnv, space: string, at: number | undefined, verb: string): Promise<{ changed: boolean }> {
  await settledRecord(env, verb); // a claim a killed writer left is settled first
  const { broker, rec } = resignSource(env.layout, space);
  if (revokeAllBefore(rec.jwt) === at) return { changed: false };
  const to = resignAccountRevocations(broker.operator, rec.jwt, at).jwt;
  const r = await runMutation(env, { op: "limits", verb, limitsChange: { space, from: rec.jwt, to } });
  if (r.outcome !== "committed") {
    throw new CotalError("reload-unproven", `${verb} of space ${space} was not proven by the broker (${r.outcome})`, { next: "cotal up   # resumes it" });
  }
  return { changed: true };
}

/**
 * The lift an online verb ends with: journaled `lifting` first (a crash from here on resumes to lifted),
 * then the tenant's JWT re-signed without the revocation, proven through the saga. Returns when it was proven.
 */
export async function liftTenant(env: SagaEnv, lock: MaintenanceLock, attemptId: string, space: string, verb: string, clock?: PhaseClock): Promise<number> {
  setQuiesceStage(env.layout, lock, attemptId, "lifting");
  clock?.enter("lift saga");
  await resignRevocations(env, space, undefined, `${verb} (lift)`);
  clock?.lap("lift saga");
  return Date.now();
}

/** Updates the standing quiesce entry of `attemptId` (under the held lock); refuses if it is not ours any more. */
export function updateQuiesce(layout: RootLayout, lock: MaintenanceLock, attemptId: string, patch: Partial<Pick<QuiesceEntry, "stage" | "outIno" | "replace" | "safety">>): QuiesceEntry {
  const j = readJournal(layout);
  if (j?.op !== "quiesce" || j.attemptId !== attemptId) {
    throw new CotalError("lock-lost", `the online backup ${attemptId} is no longer the journal's entry`, { next: "cotal status" });
  }
  const next = { ...j, ...patch };
  writeJournal(layout, lock, next);
  return next;
}

export function setQuiesceStage(layout: RootLayout, lock: MaintenanceLock, attemptId: string, stage: QuiesceStage): void {
  updateQuiesce(layout, lock, attemptId, { stage });
}

/** An artifact directory this attempt provably created (its inode journaled) and never completed. */
function removePartialArtifact(entry: QuiesceEntry): "removed" | "complete" | "absent" | "not-ours" {
  if (!existsSync(entry.out)) return "absent";
  if (existsSync(join(entry.out, MANIFEST_FILE))) return "complete";
  const st = lstatSync(entry.out);
  if (!entry.outIno || !st.isDirectory() || st.dev !== entry.outIno.dev || st.ino !== entry.outIno.ino) return "not-ours";
  rmSync(entry.out, { recursive: true, force: true });
  return "removed";
}

export interface QuiesceRecovery {
  purpose: "backup" | "restore";
  space: string;
  attemptId: string;
  /** The stage the dead backup had reached. */
  stage: QuiesceStage;
  lifted: boolean;
  artifact: "removed" | "complete" | "absent" | "not-ours";
  out: string;
  /** restore: the partially installed streams it deleted so the lifted tenant never sees a mix. */
  dropped?: string[];
  /** restore --replace after its deletion began, with no safety copy (a legacy entry): lifted, the entry left for the re-run. */
  unfinished?: boolean;
  /** restore --replace after its deletion began: the streams put back from its safety copy (restore-safety.ts). */
  putBack?: string[];
}

/**
 * Resumes a stopped online restore to lifted (docs/resume.md): a namespace it changed is emptied of
 * the artifact's streams first (pre-restore data, or none for --replace); a finished one is kept.
 * A --replace whose deletion began keeps its entry, stage `unfinished`: only the re-run restores the data.
 */
async function recoverRestore(env: SagaEnv, url: string, entry: QuiesceEntry, verb: string): Promise<QuiesceRecovery> {
  const base = { purpose: "restore" as const, space: entry.space, attemptId: entry.attemptId, stage: entry.stage, out: entry.out, artifact: "complete" as const };
  if (entry.stage === "unfinished") return { ...base, lifted: false, unfinished: true };
  const finished = entry.stage === "verified" || entry.stage === "lifting";
  const safety = entry.safety;
  const touched = entry.stage === "deleting" || entry.stage === "restoring" || entry.replace?.deletionBegan === true;
  if (!finished && touched && safety?.complete) {
    // Old or new, never less: the partial restore goes and the tenant's own streams come back from the copy.
    const putBack = await putBackFromSafety(env, url, entry, safety.dir);
    const { changed } = await resignRevocations(env, entry.space, undefined, `${verb} (lift)`);
    clearJournal(env.layout, env.lock);
    dropSafety(safety.dir);
    return { ...base, lifted: changed, putBack };
  }
  const dropped = !finished && touched ? await dropPartialRestore(env, url, entry) : [];
  const { changed } = await resignRevocations(env, entry.space, undefined, `${verb} (lift)`);
  if (!finished && entry.replace?.deletionBegan) {
    updateQuiesce(env.layout, env.lock, entry.attemptId, { stage: "unfinished" });
    return { ...base, lifted: changed, dropped, unfinished: true };
  }
  clearJournal(env.layout, env.lock);
  if (safety) dropSafety(safety.dir); // nothing was deleted (or the restore verified): the copy is not needed
  return { ...base, lifted: changed, dropped };
}

/** Puts the tenant's streams back from a --replace's safety copy, as a user issued after the quiesce. */
async function putBackFromSafety(env: SagaEnv, url: string, entry: QuiesceEntry, dir: string): Promise<string[]> {
  const { rec } = resignSource(env.layout, entry.space);
  const t = revokeAllBefore(rec.jwt);
  const nc = await connectAsAccount(url, rec, { name: `cotal-restore-putback-${entry.space}`, reconnect: false, ttlSeconds: 3600, permissions: REPLACE_USER_PERMISSIONS, ...(t !== undefined ? { issuedAt: issuedAfter(t) } : {}) });
  try {
    return await putBackSafety(nc, await jetstreamManager(nc), dir, entry.streams ?? [], tenantReplicasOf(clusterOf(env.layout, loadSettings(env.layout))), () => undefined);
  } finally {
    await nc.close();
  }
}

/**
 * Resumes a stopped online backup to lifted: the lift (proven), then the partial artifact it
 * created removed (a complete one is kept), then the entry cleared. Idempotent at every cut.
 */
export async function recoverQuiesce(env: SagaEnv, entry: QuiesceEntry, verb: string, url?: string): Promise<QuiesceRecovery> {
  if (entry.purpose === "restore") {
    if (url === undefined) throw new CotalError("broker-not-running", `the stopped restore of space ${entry.space} is recovered through the running broker`, { next: "cotal up" });
    return recoverRestore(env, url, entry, verb);
  }
  setQuiesceStage(env.layout, env.lock, entry.attemptId, "lifting");
  const { changed } = await resignRevocations(env, entry.space, undefined, `${verb} (lift)`);
  const artifact = removePartialArtifact(entry);
  clearJournal(env.layout, env.lock);
  return { purpose: "backup", space: entry.space, attemptId: entry.attemptId, stage: entry.stage, lifted: changed, artifact, out: entry.out };
}

/** Spaces whose record on disk carries a `revocations["*"]`: quiesced, whether or not an entry says so. */
export function quiescedOnDisk(layout: RootLayout, records: readonly AccountRecord[]): { space: string; revokeAllBefore: number }[] {
  const out: { space: string; revokeAllBefore: number }[] = [];
  for (const rec of records) {
    let at: number | undefined;
    try {
      at = recordRevokeAllBefore(rec);
    } catch {
      continue; // an undecodable JWT is the corrupt-record check's to report
    }
    if (at !== undefined) out.push({ space: rec.name, revokeAllBefore: at });
  }
  return out;
}

/**
 * How many tenants stand quiesced on this root right now: the one a quiesce journal entry names plus
 * every account JWT that revokes all users (what `cotal status` lists). For the worker's gauge.
 */
export function quiescedCount(layout: RootLayout, guards: Guards = GUARDS_ON): number {
  const names = new Set<string>();
  try {
    for (const q of quiescedOnDisk(layout, certainInventory(layout, guards))) names.add(q.space);
  } catch {
    // a corrupt record is status's to report; the gauge counts what it can read
  }
  try {
    const entry = standingQuiesce(readJournal(layout));
    if (entry) names.add(entry.space);
  } catch {
    // an unreadable journal is status's to report; the gauge counts what it can read
  }
  return names.size;
}

export interface LiftReport {
  recovered?: QuiesceRecovery;
  /** Tenants whose JWT carried "*" with no entry, lifted too. */
  lifted: string[];
}

/**
 * `cotal up`'s hook on a running broker (the caller holds the lock and has passed the journal, so
 * any quiesce entry left belongs to a dead owner): resume it to lifted, and lift any tenant whose
 * JWT still revokes all its users without an entry.
 */
export async function liftStandingQuiesces(layout: RootLayout, lock: MaintenanceLock, hooks: { onNotice?: (m: string) => void; guards: Guards }): Promise<LiftReport> {
  const entry = readJournal(layout);
  const pending = entry?.op === "quiesce" && entry.stage !== "unfinished" ? entry : undefined;
  const stray = quiescedOnDisk(layout, certainInventory(layout, hooks.guards)).filter((q) => q.space !== pending?.space);
  if (!pending && stray.length === 0) return { lifted: [] };
  let session: LiveSession | undefined;
  try {
    session = await openLiveSession(layout, "up (lift)", hooks);
    const env = session.envWith(lock);
    const report: LiftReport = { lifted: [] };
    if (pending) report.recovered = await recoverQuiesce(env, pending, "up", session.url);
    for (const q of stray) {
      await resignRevocations(env, q.space, undefined, "up (lift)");
      report.lifted.push(q.space);
    }
    return report;
  } finally {
    await session?.close();
  }
}
