/**
 * What `cotal space backup` takes and returns, whichever path runs it (online: online-backup.ts;
 * offline after a cut: backup.ts), and which streams an artifact never carries.
 */
import { spaceTemplate } from "../provision/template.js";
import type { ProgressSink } from "./progress.js";

export interface SpaceBackupOptions {
  root: string;
  space: string;
  out: string;
  lockWaitMs?: number;
  onProgress?: ProgressSink;
  onNotice?: (message: string) => void;
  /** "offline": refuse unless a ready cut holds the stopped store; default: online when the broker runs. */
  mode?: "online" | "offline";
}

export interface SpaceBackupResult {
  /** online: the running broker, the tenant quiesced (maintenance/online-backup.ts); offline: after a cut. */
  mode?: "online" | "offline";
  space: string;
  out: string;
  attemptId: string;
  cutId: string;
  accountPublicKey: string;
  streams: { name: string; messages: number; bytes: number; size: number }[];
  excluded: string[];
  bytes: number;
}

/** The ttl-class bucket streams of a space: excluded from the artifact by the template's declared class. */
export function ttlStreams(space: string): { name: string; bucket: string }[] {
  return spaceTemplate(space).buckets.filter((b) => b.class === "ttl").map((b) => ({ name: `KV_${b.bucket}`, bucket: b.bucket }));
}
