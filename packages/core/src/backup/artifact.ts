import { createHash } from "node:crypto";
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, normalize } from "node:path";
import { CotalError } from "../errors.js";
import { readTextIfExists } from "../root/secret-files.js";
import type { StreamState } from "./stream-snapshot.js";

export const ARTIFACT_FORMAT = "cotal.space-backup/1";
export const MANIFEST_FILE = "manifest.json";
export const CHECKPOINTS_FILE = "checkpoints.json";

export interface ManifestStream {
  name: string;
  class: "durable";
  /** Relative to the artifact directory. */
  file: string;
  config: Record<string, unknown>;
  /** The stream's state when the server began its snapshot: the artifact holds at least this. */
  state: StreamState;
  /**
   * Live backups only: the stream's last sequence once its snapshot ended, when writes landed during
   * it. The server snapshots a stream while it takes writes, so the artifact holds `state` plus, at
   * most, the messages up to this sequence (docs/backup.md, "What a live backup holds").
   */
  grewTo?: number;
}

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

/** Written last and atomically: its presence is the completion marker. No seeds, no JWTs. */
export interface BackupManifest {
  format: typeof ARTIFACT_FORMAT;
  space: string;
  /** Pinned: a restore into a space whose account key differs refuses unless --rebind-account. */
  accountPublicKey: string;
  cutId: string;
  attemptId: string;
  createdAt: string;
  /**
   * cross-stream: every stream at one moment (offline after a cut, or online with --quiesce);
   * per-stream (a live backup): each stream consistent at its own snapshot, the tenant writing meanwhile.
   * Absent in artifacts written before live backups existed: cross-stream.
   */
  consistency?: "cross-stream" | "per-stream";
  streams: ManifestStream[];
  /** ttl-class buckets: not carried; a restore recreates them empty from the template. */
  excluded: { name: string; bucket: string; class: "ttl" }[];
  files: ManifestFile[];
}

export interface ConsumerCheckpoint {
  stream: string;
  name: string;
  ack_floor: { consumer_seq: number; stream_seq: number };
  delivered: { consumer_seq: number; stream_seq: number };
  num_ack_pending: number;
  num_pending: number;
}

export interface Checkpoints {
  format: "cotal.checkpoints/1";
  space: string;
  consumers: ConsumerCheckpoint[];
}

export function sha256File(path: string): { size: number; sha256: string } {
  const hash = createHash("sha256");
  const fd = openSync(path, "r");
  const buf = Buffer.alloc(1 << 20);
  let size = 0;
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      size += n;
    }
  } finally {
    closeSync(fd);
  }
  return { size, sha256: hash.digest("hex") };
}

function invalid(dir: string, why: string): CotalError {
  return new CotalError("artifact-invalid", `${dir} is not a usable space backup: ${why}; nothing was changed`, {
    // a runnable line without the verb's context; restores and `backup verify` replace it (artifact-paths.ts)
    next: `ls -la ${JSON.stringify(dirname(dir))}   # pick another complete artifact (one holding ${MANIFEST_FILE})`,
    details: { artifact: dir, reason: why },
  });
}

function safeRelative(p: unknown): p is string {
  return typeof p === "string" && p.length > 0 && !isAbsolute(p) && !normalize(p).startsWith("..");
}

/** Parses the manifest and re-verifies every listed file's size and sha256 (a truncated or tampered file refuses). */
export function verifyArtifact(dir: string, onBytes?: (n: number) => void): { manifest: BackupManifest; checkpoints: Checkpoints } {
  const text = readTextIfExists(join(dir, MANIFEST_FILE));
  if (text === undefined) throw invalid(dir, `no ${MANIFEST_FILE} (an incomplete or interrupted backup)`);
  let m: BackupManifest;
  try {
    m = JSON.parse(text) as BackupManifest;
  } catch {
    throw invalid(dir, `${MANIFEST_FILE} is not JSON`);
  }
  if (m.format !== ARTIFACT_FORMAT) throw invalid(dir, `unknown format ${JSON.stringify(m.format)}`);
  if (typeof m.space !== "string" || typeof m.accountPublicKey !== "string" || !Array.isArray(m.streams) || !Array.isArray(m.files) || !Array.isArray(m.excluded)) throw invalid(dir, "manifest fields are missing");
  const listed = new Map(m.files.map((f) => [f.path, f]));
  for (const s of m.streams) if (!listed.has(s.file)) throw invalid(dir, `stream ${s.name} names ${s.file}, which the file list does not pin`);
  if (!listed.has(CHECKPOINTS_FILE)) throw invalid(dir, `${CHECKPOINTS_FILE} is not pinned`);
  for (const f of m.files) {
    if (!safeRelative(f.path)) throw invalid(dir, `file path ${JSON.stringify(f.path)} escapes the artifact`);
    const path = join(dir, f.path);
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      throw invalid(dir, `${f.path} is missing`);
    }
    if (size !== f.size) throw invalid(dir, `${f.path} is ${size} bytes, the manifest pins ${f.size}`);
    const got = sha256File(path);
    onBytes?.(got.size);
    if (got.sha256 !== f.sha256) throw invalid(dir, `${f.path} does not match its pinned sha256`);
  }
  let checkpoints: Checkpoints;
  try {
    checkpoints = JSON.parse(readTextIfExists(join(dir, CHECKPOINTS_FILE)) ?? "") as Checkpoints;
  } catch {
    throw invalid(dir, `${CHECKPOINTS_FILE} is not JSON`);
  }
  return { manifest: m, checkpoints };
}
