import { type Guards } from "../guards.js";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { connectAsAccount } from "../broker/connect.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import type { BackupManifest, Checkpoints, ManifestFile } from "./artifact.js";
import type { Attempt } from "./attempt.js";
import { startPrivateBroker } from "../broker/private-broker.js";
import type { ProgressSink } from "./progress.js";
import { snapshotStream } from "./stream-snapshot.js";
import { installArtifactStreams, listStreams, replaceable, targetNotEmpty } from "./restore-streams.js";

export type RestorePass = "quarantine" | "target";

/** The quarantine's re-snapshot: the artifact the target pass installs. */
export interface Rehearsed {
  artifactDir: string;
  manifest: BackupManifest;
}

async function resnapshot(nc: NatsConnection, m: BackupManifest, dir: string, progress: ProgressSink, guards: Guards): Promise<Rehearsed> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files: ManifestFile[] = [];
  let done = 0;
  for (const s of m.streams) {
    mkdirSync(dirname(join(dir, s.file)), { recursive: true, mode: 0o700 });
    const snap = await snapshotStream(nc, s.name, join(dir, s.file), (n) => progress({ phase: "quarantine", stream: s.name, done: (done += n), total: Math.max(done, 1) }), { guards });
    files.push({ path: s.file, size: snap.size, sha256: snap.sha256 });
  }
  return { artifactDir: dir, manifest: { ...m, files } };
}

function verifyFailed(pass: RestorePass, why: string, attemptId: string): CotalError {
  return new CotalError("restore-verify-failed", `${pass} restore did not reproduce the artifact: ${why}`, {
    next: pass === "quarantine" ? "cotal space list   # nothing was changed; take a fresh backup of the space, the artifact does not restore" : `cotal clean restore-attempt --attempt ${attemptId}   # removes the streams this attempt installed`,
    details: { pass, reason: why },
  });
}

/**
 * One restore pass through a private broker on `storeDir`: refuse a non-empty namespace, drop the
 * replaceable streams, then install and verify the artifact's streams (restore-streams.ts).
 */
export async function runRestorePass(layout: RootLayout, pass: RestorePass, storeDir: string, account: AccountRecord, artifactDir: string, m: BackupManifest, checkpoints: Checkpoints, attempt: Attempt, progress: ProgressSink, guards: Guards): Promise<Rehearsed | undefined> {
  const broker = await startPrivateBroker(layout, { storeDir, workDir: attempt.workDir, spaces: [account], label: `restore-${pass}`, guards, onSpawn: (o) => attempt.broker(o) });
  try {
    const nc = await connectAsAccount(broker.url, account, { name: `cotal-restore-${pass}-${m.space}`, reconnect: false, ttlSeconds: 3600 });
    try {
      const jsm = await jetstreamManager(nc);
      const ttl = m.excluded.map((e) => e.name);
      const existing = await listStreams(jsm);
      const occupied = existing.filter((i) => !replaceable(i, m.space, ttl));
      if (occupied.length > 0) throw targetNotEmpty(m.space, occupied, `cotal up && cotal space restore ${m.space} --from ${artifactDir} --replace --yes   # restores over its streams on the running broker`);
      await failpoint(`restore-${pass}-begin`);
      for (const i of existing) await jsm.streams.delete(i.config.name);
      await installArtifactStreams(nc, jsm, artifactDir, m, checkpoints, progress, {
        phase: pass,
        streamFailpoint: `restore-${pass}-stream`,
        ...(pass === "target" ? { onInstalling: (name: string) => attempt.installing(name) } : {}),
        verifyFailed: (why) => verifyFailed(pass, why, attempt.id),
      });
      await failpoint(`restore-${pass}-verified`);
      // The target installs what this server re-snapshots from the verified quarantine, never the
      // staged bytes themselves: only bytes this server produced from a proven restore reach the store.
      if (pass === "quarantine") return await resnapshot(nc, m, join(attempt.workDir, "resnap"), progress, guards);
      return undefined;
    } finally {
      await nc.close();
    }
  } finally {
    await broker.stop();
  }
}
