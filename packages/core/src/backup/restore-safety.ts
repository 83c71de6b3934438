/**
 * The safety copy of `space restore --replace` (docs/backup.md, "A restore never leaves less"): before
 * the first of the tenant's streams is deleted, those streams are snapshotted (the tenant quiesced, so
 * exactly) into `maintenance/safety-<attempt>/` under the root, in the artifact format. Until the
 * restored streams verify it stays; a failed or killed replace puts it back, so the tenant ends with
 * its old data or the new, never less.
 */
import { type Guards } from "../guards.js";
import { mkdirSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { RootLayout } from "../root/layout.js";
import { verifyArtifact } from "./artifact.js";
import type { ProgressSink } from "./progress.js";
import { deleteStreams, installArtifactStreams } from "./restore-streams.js";
import { publishArtifact, snapshotDurableStreams } from "./snapshot-set.js";

/** Where attempt `attemptId` keeps the streams its --replace deletes. */
export function safetyDirOf(layout: RootLayout, attemptId: string): string {
  return join(layout.maintenanceDir, `safety-${attemptId}`);
}

/** What the user of a replace may do: the restore's rights plus snapshotting (the safety copy). */
export const REPLACE_USER_PERMISSIONS = {
  allowPub: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.DELETE.*", "$JS.API.STREAM.RESTORE.*", "$JS.API.STREAM.CREATE.*", "$JS.API.STREAM.SNAPSHOT.*", "$JS.API.CONSUMER.INFO.*.*", "$JS.API.CONSUMER.LIST.*", "$JS.SNAPSHOT.ACK.>", "$JS.SNAPSHOT.RESTORE.>"],
  allowSub: ["_INBOX.>"],
};

/** Free bytes where the safety copy goes must cover the streams it keeps, with a margin for the snapshots' framing. */
export function assertRoomForSafety(layout: RootLayout, doomed: readonly StreamInfo[], next: string): void {
  const need = Math.ceil(doomed.reduce((n, s) => n + s.state.bytes, 0) * 1.1) + 1024 * 1024;
  const fs = statfsSync(layout.root);
  const free = fs.bavail * fs.bsize;
  if (free < need) {
    throw new CotalError("io", `--replace keeps a safety copy of the streams it deletes under ${layout.maintenanceDir} (${need} bytes with margin), but that file system has ${free} bytes free; nothing was changed`, {
      next,
      details: { need, free, path: layout.maintenanceDir },
    });
  }
}

/** Snapshots `doomed` (the tenant quiesced) into the attempt's safety directory, manifest last: complete or unusable. */
export async function takeSafety(nc: NatsConnection, jsm: JetStreamManager, dir: string, doomed: readonly StreamInfo[], head: { space: string; accountPublicKey: string; attemptId: string }, progress: ProgressSink, guards: Guards): Promise<void> {
  rmSync(dir, { recursive: true, force: true }); // a half copy of a killed attempt is never completed, only redone
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const changed = (stream: string, before: number, after: number) =>
    new CotalError("store-inventory", `stream ${stream} changed during its safety copy (${before}→${after} messages) although its tenant is quiesced; nothing was deleted`, { next: "cotal status" });
  const set = await snapshotDurableStreams(nc, jsm, dir, doomed, progress, { kind: "still", changed }, guards);
  await publishArtifact(dir, set, { ...head, cutId: `safety-${head.attemptId}`, consistency: "cross-stream", excluded: [] });
  await failpoint("restore-safety-taken");
}

/**
 * Puts the safety copy back: whatever the namespace holds of the artifact's and the safety's streams
 * (a partial restore) is deleted, then the safety's streams are restored and verified exactly.
 */
export async function putBackSafety(nc: NatsConnection, jsm: JetStreamManager, dir: string, artifactStreams: readonly string[], replicas: number | undefined, progress: ProgressSink): Promise<string[]> {
  const { manifest, checkpoints } = verifyArtifact(dir);
  const names = manifest.streams.map((s) => s.name);
  await deleteStreams(jsm, [...new Set([...artifactStreams, ...names])]);
  await installArtifactStreams(nc, jsm, dir, manifest, checkpoints, progress, {
    phase: "online",
    streamFailpoint: "restore-safety-stream",
    verifyFailed: (why) => new CotalError("restore-verify-failed", `putting the tenant's own streams back from ${dir} did not reproduce them: ${why}; the copy stays there`, { next: "cotal status", details: { reason: why, safety: dir } }),
    ...(replicas !== undefined ? { replicas } : {}),
  });
  return names;
}

export function dropSafety(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
