/**
 * `cotal space backup <name> --out DIR` on a running broker, the default (docs/backup.md): the tenant
 * stays connected and keeps writing. Each durable stream is snapshotted through the running server (as
 * `nats account backup` does), each consistent at its own moment, into a hidden sibling of DIR that is
 * renamed to DIR once its manifest is written: DIR is a complete artifact or absent. It changes no trust
 * (no saga, no reload, no journal); the maintenance lock keeps a restore or removal of the tenant out.
 */
import { GUARDS_ON } from "../guards.js";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CotalError, isCotalError, RERUN } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { connectAsAccount } from "../broker/connect.js";
import { pidAlive } from "../lock/process-identity.js";
import { withLiveVerb } from "../verb/verb.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import { fsyncDir } from "../root/secret-files.js";
import { newAttemptId } from "./attempt.js";
import { checkBackupOut } from "./artifact-paths.js";
import { BACKUP_USER_PERMISSIONS, backupResultOf, ttlStreams, type SpaceBackupOptions, type SpaceBackupResult } from "./backup-contract.js";
import type { PhaseClock } from "./phase-clock.js";
import { recoverQuiesce, type QuiesceRecovery } from "./quiesce.js";
import { publishArtifact, snapshotDurableStreams } from "./snapshot-set.js";

/** `.<out>.partial-<pid>-<attempt>`: where a live backup writes before its rename; the pid tells a dead writer's. */
export function partialDirOf(out: string, pid: number, attemptId: string): string {
  return join(dirname(out), `.${basename(out)}.partial-${pid}-${attemptId}`);
}

/** Removes the partial directories dead writers left beside `out` (a killed live backup's only trace). */
export function reapDeadPartials(out: string, alive: (pid: number) => boolean = pidAlive): string[] {
  const prefix = `.${basename(out)}.partial-`;
  let names: string[];
  try {
    names = readdirSync(dirname(out));
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const name of names) {
    const pid = Number(name.startsWith(prefix) ? name.slice(prefix.length).split("-")[0] : Number.NaN);
    if (!Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
    rmSync(join(dirname(out), name), { recursive: true, force: true });
    reaped.push(name);
  }
  return reaped;
}

export interface LiveBackupResult extends SpaceBackupResult {
  mode: "online";
  consistency: "per-stream";
  /** A stopped --quiesce backup this run lifted first. */
  recovered?: QuiesceRecovery;
}

export async function backupLive(opts: SpaceBackupOptions, clock: PhaseClock): Promise<LiveBackupResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.space, guards);
  const out = resolve(opts.out);
  const layout = new RootLayout(canonicalRoot(opts.root));
  const progress = opts.onProgress ?? (() => undefined);
  const verb = { root: layout.root, guards, purpose: `cotal space backup ${space}`, journal: { verb: "space backup" as const }, lockWaitMs: opts.lockWaitMs ?? 30_000, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) };
  return withLiveVerb(verb, async ({ lock, session, journal, disk }) => {
    clock.lap("session open, lock, preamble");
    // A stopped --quiesce backup left its tenant refused: lift it first (its owner is dead, or the journal refused us).
    const recovered = journal?.op === "quiesce" ? await recoverQuiesce(session.envWith(lock), journal, "space backup", session.url) : undefined;
    if (recovered) opts.onNotice?.(`lifted the quiesce of space ${recovered.space} left by backup ${recovered.attemptId} (${recovered.stage})`);
    const account = disk.find((t) => t.name === space);
    if (!account) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root}`, { next: `cotal --root ${layout.root} space list` });
    const kv = await session.store.read();
    if (!kv?.record.spaces.includes(space)) throw new CotalError("space-not-found", `space ${space} is not in the inventory`, { next: `cotal --root ${layout.root} space list` });

    const attemptId = newAttemptId();
    let nc: NatsConnection | undefined;
    let partial: string | undefined;
    try {
      nc = await connectAsAccount(session.url, account, { name: `cotal-backup-${space}`, reconnect: false, ttlSeconds: 3600, permissions: BACKUP_USER_PERMISSIONS });
      const jsm = await jetstreamManager(nc);
      const excluded = ttlStreams(space);
      const durable = [];
      for await (const si of jsm.streams.list()) if (!excluded.some((e) => e.name === si.config.name)) durable.push(si);
      durable.sort((a, b) => (a.config.name < b.config.name ? -1 : 1));
      clock.lap("backup user connect, stream list");
      // Everything the write needs is checked before the first byte: the path, its room for the space's bytes.
      checkBackupOut(out, { space, root: layout.root, needBytes: durable.reduce((n, x) => n + x.state.bytes, 0) });
      reapDeadPartials(out);
      partial = partialDirOf(out, process.pid, attemptId);
      mkdirSync(partial, { mode: 0o700 });
      const set = await snapshotDurableStreams(nc, jsm, partial, durable, progress, { kind: "live" }, guards, opts.tuning);
      clock.lap("snapshots");
      const manifest = await publishArtifact(partial, set, { space, accountPublicKey: account.publicKey, cutId: `live-${attemptId}`, attemptId, consistency: "per-stream", excluded: excluded.map((e) => ({ ...e, class: "ttl" as const })) });
      await failpoint("backup-live-published");
      renameSync(partial, out); // the artifact appears whole: a crash before this leaves only the partial
      partial = undefined;
      fsyncDir(dirname(out));
      clock.lap("manifest, rename");
      return { ...backupResultOf(manifest, out), mode: "online" as const, consistency: "per-stream" as const, ...(recovered ? { recovered } : {}) };
    } catch (err) {
      if (partial) rmSync(partial, { recursive: true, force: true });
      if (isCotalError(err)) throw err;
      throw new CotalError("snapshot-failed", `the live backup of space ${space} failed: ${(err as Error).message}; its clients were never touched and no artifact was kept`, { next: `${RERUN}   # run it again`, cause: err });
    } finally {
      await nc?.close().catch(() => undefined);
    }
  });
}
