/**
 * `cotal space backup <name> --out DIR` on a running broker (README: backup): quiesce only that
 * tenant (its account JWT revokes every user issued before now; docs/resume.md, the quiesce entry),
 * snapshot its streams through the running broker as a user issued after the quiesce, write the
 * manifest last, lift. The artifact format is the offline one, so the offline restore reads it.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { lstatSync, mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { RERUN, CotalError, isCotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { connectAsAccount } from "../broker/connect.js";
import { selfOwner } from "../lock/process-identity.js";
import type { SessionHooks } from "../verb/session.js";
import { withLiveVerb, type LiveVerbContext } from "../verb/verb.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import type { SagaEnv } from "../saga/mutation.js";
import { clearJournal, readJournal, writeJournal, type QuiesceEntry } from "../journal/journal.js";
import { verifyArtifact, type BackupManifest } from "./artifact.js";
import { newAttemptId } from "./attempt.js";
import { checkBackupOut, spaceStoreBytes } from "./artifact-paths.js";
import { BACKUP_USER_PERMISSIONS, backupResultOf, ttlStreams, type SpaceBackupOptions, type SpaceBackupResult } from "./backup-contract.js";
import { publishArtifact, snapshotDurableStreams } from "./snapshot-set.js";
import { PhaseClock, type PhaseTiming } from "./phase-clock.js";
import { backupLive, type LiveBackupResult } from "./live-backup.js";
import { quiesceTenant, recoverQuiesce, issuedAfter, setQuiesceStage, updateQuiesce, type QuiesceRecovery, liftTenant } from "./quiesce.js";

export interface OnlineBackupResult extends SpaceBackupResult {
  mode: "online";
  /** per-stream: live, the tenant writing meanwhile (the default); cross-stream: --quiesce. */
  consistency: "per-stream" | "cross-stream";
  /** --quiesce: epoch ms of the quiesce proven, the last snapshot's end marker read, the lift proven. */
  timeline?: { quiesceProvenAt: number; snapshotsDoneAt: number; liftProvenAt: number };
  /** What the evictor found after the quiesce: "none" where the revocation already evicted every client; "skipped" before 2.10. */
  eviction?: { outcome: string; kicked: number; reason?: string };
  /** A stopped online backup this run lifted first. */
  recovered?: QuiesceRecovery;
  /** Where the time went, phase by phase, with the quiesce's and the lift's saga steps (BENCHMARKS.md). */
  phases: PhaseTiming[];
}


export async function spaceBackupOnline(opts: SpaceBackupOptions & SessionHooks): Promise<OnlineBackupResult | (LiveBackupResult & { phases: PhaseTiming[] }) | (SpaceBackupResult & { mode: "online"; recovered: QuiesceRecovery; phases: PhaseTiming[] })> {
  const clock = new PhaseClock();
  const result = opts.quiesce ? await backupOnline(opts, clock) : await backupLive(opts, clock);
  clock.lap("session close");
  return { ...result, phases: clock.laps };
}

type QuiescedResult = Omit<OnlineBackupResult, "phases"> | (SpaceBackupResult & { mode: "online"; recovered: QuiesceRecovery });
const AGAIN = `${RERUN}   # run it again`;

/** `--quiesce`: every stream at one moment, the tenant's users refused meanwhile (docs/backup.md, "--quiesce"). */
async function backupOnline(opts: SpaceBackupOptions & SessionHooks, clock: PhaseClock): Promise<QuiescedResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const out = resolve(opts.out);
  const layout = new RootLayout(canonicalRoot(opts.root));
  const verb = { root: layout.root, guards, purpose: `cotal space backup ${space}`, journal: { verb: "space backup" as const }, lockWaitMs: opts.lockWaitMs ?? 30_000, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) };
  return withLiveVerb(verb, async (v) => {
    clock.lap("session open, lock, preamble");
    const base = v.session.envWith(v.lock);
    const env: SagaEnv = { ...base, onTiming: (s: Parameters<PhaseClock["step"]>[0], ms: number) => (clock.step(s, ms), base.onTiming?.(s, ms)) };
    let recovered: QuiesceRecovery | undefined;
    if (v.journal?.op === "quiesce") {
      // A backup that stopped while its tenant was quiesced: lift first (journalRefusal let us through: its owner is dead).
      recovered = await recoverQuiesce(env, v.journal, "space backup", v.session.url);
      opts.onNotice?.(`lifted the quiesce of space ${recovered.space} left by backup ${recovered.attemptId} (${recovered.stage}); its artifact: ${recovered.artifact}`);
      if (recovered.out === out && recovered.artifact === "complete") {
        return { ...backupResultOf(verifyArtifact(out).manifest, out), mode: "online" as const, recovered };
      }
    }
    const account = await backupTarget(v, layout, space, out);
    const attemptId = newAttemptId();
    const entry: QuiesceEntry = { op: "quiesce", space, purpose: "backup", out, attemptId, owner: selfOwner(), startedAt: new Date().toISOString(), stage: "journaled" };
    writeJournal(layout, v.lock, entry); // before the quiesce: a crash from here on resumes to lifted
    clock.lap("inventory read, journal");
    await failpoint("backup-quiesce-journaled");
    const run: QuiescedRun = { env, layout, lock: v.lock, url: v.session.url, space, out, account, attemptId, guards, clock, opts };
    try {
      const done = await quiescedBackup(run);
      return { ...done, ...(recovered ? { recovered } : {}) };
    } catch (err) {
      throw await failClosed(run, err);
    }
  });
}

/** Checked before the quiesce: a bad --out or an unknown space never evicts the tenant (docs/backup.md). */
async function backupTarget(v: LiveVerbContext, layout: RootLayout, space: string, out: string): Promise<AccountRecord> {
  checkBackupOut(out, { space, root: layout.root, needBytes: spaceStoreBytes(layout.root, space) });
  const account = v.disk.find((t) => t.name === space);
  if (!account) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}`, { next: "cotal space list" });
  const kv = await v.session.store.read();
  if (!kv?.record.spaces.includes(space)) throw new CotalError("space-not-found", `space ${space} is not in the inventory`, { next: "cotal space list" });
  return account;
}

interface QuiescedRun {
  env: SagaEnv;
  layout: RootLayout;
  lock: LiveVerbContext["lock"];
  url: string;
  space: string;
  out: string;
  account: AccountRecord;
  attemptId: string;
  guards: Guards;
  clock: PhaseClock;
  opts: SpaceBackupOptions & SessionHooks;
}

/** Quiesce (proven), snapshot every durable stream as a user issued after it, publish, lift (proven), clear the journal. */
async function quiescedBackup(run: QuiescedRun): Promise<Omit<OnlineBackupResult, "phases">> {
  const { env, layout, lock, space, out, account, attemptId, guards, clock } = run;
  // The claims update evicts the tenant's clients itself; the evictor (2.10+) confirms none is left, and cuts a survivor.
  // SKIP_QUIESCE: the quiesce cell's positive control, the tenant stays connected while its streams are read.
  const q = guards.SKIP_QUIESCE ? undefined : await quiesceTenant(env, run.url, account, "space backup", AGAIN, clock);
  const t = q?.t ?? Math.floor(Date.now() / 1000);
  const quiesceProvenAt = q?.provenAt ?? Date.now();
  setQuiesceStage(layout, lock, attemptId, "quiesced");
  await failpoint("backup-quiesced");
  const nc = await connectAsAccount(run.url, account, { name: `cotal-backup-${space}`, reconnect: false, ttlSeconds: 3600, permissions: BACKUP_USER_PERMISSIONS, issuedAt: issuedAfter(t) });
  let manifest: BackupManifest;
  let snapshotsDoneAt: number;
  try {
    clock.lap("backup user connect");
    ({ manifest, snapshotsDoneAt } = await snapshotStill(run, nc));
  } finally {
    await nc.close().catch(() => undefined);
  }
  clock.lap("backup user close");
  const liftProvenAt = await liftTenant(env, lock, attemptId, space, "space backup", clock);
  await failpoint("backup-lifted");
  clearJournal(layout, lock); // only after the lift's proof
  return { ...backupResultOf(manifest, out), mode: "online" as const, consistency: "cross-stream" as const, timeline: { quiesceProvenAt, snapshotsDoneAt, liftProvenAt }, ...(q?.eviction ? { eviction: q.eviction } : {}) };
}

/** The durable streams' snapshots and manifest, refused if any stream moved while its tenant was quiesced. */
async function snapshotStill(run: QuiescedRun, nc: NatsConnection): Promise<{ manifest: BackupManifest; snapshotsDoneAt: number }> {
  const { layout, lock, space, out, account, attemptId, clock } = run;
  const jsm = await jetstreamManager(nc);
  const excluded = ttlStreams(space);
  const listed = async () => {
    const infos = [];
    for await (const si of jsm.streams.list()) infos.push(si);
    return infos.filter((i) => !excluded.some((e) => e.name === i.config.name)).sort((a, b) => (a.config.name < b.config.name ? -1 : 1));
  };
  const durable = await listed();
  clock.lap("stream list (before)");
  mkdirSync(out, { mode: 0o700 });
  const st = lstatSync(out);
  updateQuiesce(layout, lock, attemptId, { stage: "snapshotting", outIno: { dev: st.dev, ino: st.ino } });
  const set = await snapshotDurableStreams(nc, jsm, out, durable, run.opts.onProgress ?? (() => undefined), { kind: "still", changed: (name, before, after) =>
    new CotalError("store-inventory", `stream ${name} changed during its snapshot (${before}→${after} messages) although its tenant is quiesced`, { next: AGAIN }) }, run.guards, run.opts.tuning);
  const snapshotsDoneAt = Date.now();
  clock.lap("snapshots");
  // The same streams, unchanged, after the last snapshot: nothing wrote while we read.
  const after = await listed();
  const moved = after.filter((a) => {
    const b = durable.find((d) => d.config.name === a.config.name);
    return !b || b.state.messages !== a.state.messages || b.state.last_seq !== a.state.last_seq;
  });
  if (moved.length > 0 || after.length !== durable.length) {
    throw new CotalError("store-inventory", `streams of space ${space} changed during the backup: ${moved.map((m) => m.config.name).join(", ") || "a stream was added or removed"}`, { next: AGAIN });
  }
  clock.lap("stream list (after)");
  const manifest = await publishArtifact(out, set, { space, accountPublicKey: account.publicKey, cutId: `online-${attemptId}`, attemptId, consistency: "cross-stream", excluded: excluded.map((e) => ({ ...e, class: "ttl" as const })) });
  setQuiesceStage(layout, lock, attemptId, "published");
  await failpoint("backup-published");
  clock.lap("manifest");
  return { manifest, snapshotsDoneAt };
}

/** Fail closed to lifted: lift (proven), remove the partial artifact, clear the entry; the error to throw. */
async function failClosed(run: QuiescedRun, err: unknown): Promise<CotalError> {
  const { layout, space, attemptId } = run;
  const standing = readJournal(layout);
  if (standing?.op === "quiesce" && standing.attemptId === attemptId) {
    try {
      await recoverQuiesce(run.env, standing, "space backup", run.url);
    } catch (liftErr) {
      return new CotalError("journal-blocked", `the online backup of space ${space} failed (${(err as Error).message}) and its lift failed too (${(liftErr as Error).message}); the tenant stays quiesced`, {
        next: "cotal up   # lifts the quiesce",
        cause: err,
      });
    }
  }
  if (isCotalError(err)) return err;
  return new CotalError("snapshot-failed", `the online backup of space ${space} failed: ${(err as Error).message}; the tenant was lifted and no artifact kept`, { next: AGAIN, cause: err });
}
