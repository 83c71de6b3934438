/**
 * What `cotal space backup` and `cotal space restore` take and return, whichever path runs them
 * (online: online-backup.ts / online-restore.ts; offline after a cut: backup.ts / restore.ts), and
 * which streams an artifact never carries.
 */
import { type Guards } from "../guards.js";
import { spaceTemplate } from "../provision/template.js";
import type { BackupManifest } from "./artifact.js";
import type { ProgressSink } from "./progress.js";
import type { SnapshotTuning } from "./snapshot-set.js";
import type { RestoreOptions } from "./stream-snapshot.js";

export interface SpaceBackupOptions {
  root: string;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
  space: string;
  out: string;
  lockWaitMs?: number;
  onProgress?: ProgressSink;
  onNotice?: (message: string) => void;
  /** "offline": refuse unless a ready cut holds the stopped store; default: online when the broker runs. */
  mode?: "online" | "offline";
  /**
   * Online only: every stream at one moment, the tenant's users refused (revoked) while its streams
   * are read and let back by a second proven change. Default: a live backup, the tenant untouched.
   */
  quiesce?: boolean;
  /** Online only: how the snapshots are read; not a CLI flag: the bench compares variants (BENCHMARKS.md). */
  tuning?: SnapshotTuning;
}

export interface SpaceBackupResult {
  /** online: the running broker, the tenant quiesced (backup/online-backup.ts); offline: after a cut. */
  mode?: "online" | "offline";
  space: string;
  out: string;
  attemptId: string;
  cutId: string;
  accountPublicKey: string;
  /** Each stream as its snapshot began; `grewTo`: a live snapshot may also hold messages up to it (artifact.ts). */
  streams: { name: string; messages: number; bytes: number; first_seq?: number; last_seq?: number; grewTo?: number; size: number }[];
  excluded: string[];
  bytes: number;
}

/** The ttl-class bucket streams of a space: excluded from the artifact by the template's declared class. */
export function ttlStreams(space: string): { name: string; bucket: string }[] {
  return spaceTemplate(space).buckets.filter((b) => b.class === "ttl").map((b) => ({ name: `KV_${b.bucket}`, bucket: b.bucket }));
}

export interface SpaceRestoreOptions {
  root: string;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
  space: string;
  from: string;
  rebindAccount?: boolean;
  lockWaitMs?: number;
  onProgress?: ProgressSink;
  onNotice?: (message: string) => void;
  /** "offline": refuse unless a ready cut holds the stopped store; default: online when the broker runs. */
  mode?: "online" | "offline";
  /** Online only: restore over the tenant's streams the artifact names; needs `yes`. */
  replace?: boolean;
  yes?: boolean;
  /** Online only: the queued request this run serves (a job's id and enqueue time); its receipt makes a re-delivery a no-op. */
  requestId?: string;
  /** Online only: how the snapshots are uploaded; not a CLI flag: the bench compares variants (BENCHMARKS.md). */
  upload?: RestoreOptions;
}

export interface SpaceRestoreResult {
  /** online: the running broker, the tenant quiesced (backup/online-restore.ts); offline: after a cut. */
  mode?: "online" | "offline";
  space: string;
  from: string;
  attemptId: string;
  accountPublicKey: string;
  artifactAccountPublicKey: string;
  rebound: boolean;
  /** Each stream as the restore brought it back (online: read from the server; offline: the artifact's). */
  streams: { name: string; messages: number; first_seq?: number; last_seq: number; consumers: number }[];
  recreatedEmpty: string[];
}

/** What the backup user may do: list and snapshot streams, list consumers, ack chunks; nothing else. */
export const BACKUP_USER_PERMISSIONS = {
  allowPub: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.SNAPSHOT.*", "$JS.API.CONSUMER.LIST.*", "$JS.SNAPSHOT.ACK.>"],
  allowSub: ["_INBOX.>"],
};

/** The result every online backup reports, read off its manifest. */
export function backupResultOf(manifest: BackupManifest, out: string): SpaceBackupResult {
  const sizes = new Map(manifest.files.map((f) => [f.path, f.size]));
  return {
    space: manifest.space,
    out,
    attemptId: manifest.attemptId,
    cutId: manifest.cutId,
    accountPublicKey: manifest.accountPublicKey,
    streams: manifest.streams.map((s) => ({ name: s.name, messages: s.state.messages, bytes: s.state.bytes, first_seq: s.state.first_seq, last_seq: s.state.last_seq, ...(s.grewTo !== undefined ? { grewTo: s.grewTo } : {}), size: sizes.get(s.file) ?? 0 })),
    excluded: manifest.excluded.map((e) => e.name),
    bytes: manifest.files.reduce((n, f) => n + f.size, 0),
  };
}
