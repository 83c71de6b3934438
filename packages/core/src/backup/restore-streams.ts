/**
 * Installing an artifact's streams into a namespace through a connection as the tenant: the code
 * both restores share, the offline one through a private broker (restore-pass.ts) and the online
 * one through the running broker while the tenant is quiesced (online-restore.ts).
 */
import { join } from "node:path";
import { TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, StorageType, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { isCotalError, CotalError } from "../errors.js";
import { retryWhile } from "../retry.js";
import { failpoint, type FailpointName } from "../failpoints.js";
import { spaceTemplate } from "../provision/template.js";
import type { BackupManifest, Checkpoints, ManifestStream } from "./artifact.js";
import type { MaintenanceProgress, ProgressSink } from "./progress.js";
import { effectiveFirstSeq, restoreStream, type RestoreOptions, type StreamState } from "./stream-snapshot.js";

/**
 * A stream the restore may replace: a ttl-class bucket (recreated empty anyway) or a freshly
 * provisioned, never-used template stream (`space add` provisions them). Anything holding data or
 * consumers means the namespace is not empty, and restore does not merge.
 */
export function replaceable(info: StreamInfo, space: string, ttl: readonly string[]): boolean {
  if (ttl.includes(info.config.name)) return true;
  const tpl = spaceTemplate(space);
  const names = [...tpl.streams.map((s) => s.name), ...tpl.buckets.map((b) => `KV_${b.bucket}`)];
  return names.includes(info.config.name) && info.state.messages === 0 && info.state.last_seq === 0 && info.state.consumer_count === 0;
}

export async function listStreams(jsm: JetStreamManager): Promise<StreamInfo[]> {
  const out: StreamInfo[] = [];
  for await (const si of jsm.streams.list()) out.push(si);
  return out;
}

/** The refusal for a namespace that holds data a restore would overwrite; `next` is the caller's way out. */
export function targetNotEmpty(space: string, occupied: readonly StreamInfo[], next: string): CotalError {
  return new CotalError("restore-target-not-empty", `space ${space} already has streams: ${occupied.map((i) => `${i.config.name} (${i.state.messages} messages, ${i.state.consumer_count} consumers)`).join(", ")}; restore fills an empty namespace only`, {
    next,
    details: { streams: occupied.map((i) => i.config.name) },
  });
}

export interface InstallHooks {
  phase: MaintenanceProgress["phase"];
  /** Called before each stream's upload (the offline target journals it). */
  onInstalling?: (stream: string) => void;
  /** Armed before each stream's upload, and (when set) after each stream is installed and verified. */
  streamFailpoint: FailpointName;
  installedFailpoint?: FailpointName;
  verifyFailed: (why: string) => CotalError;
  /** Called with each stream's verified state: what the restore brought back, exactly. */
  onInstalled?: (stream: string, state: StreamState) => void;
  /** The root's tenant replicas (docs/cluster.md): each stream is re-created at it, whatever the artifact's root had. */
  replicas?: number;
  /** How each snapshot is uploaded (stream-snapshot.ts; the bench compares variants). */
  upload?: RestoreOptions;
}

/**
 * What a restored stream's state contradicts in its manifest entry, or undefined. Every field is exact,
 * except for a live snapshot that grew (`grewTo`, artifact.ts): it holds its start state plus at most
 * the messages written up to `grewTo`, so the last sequence lies in that range and the count may exceed
 * the start's by at most the sequences in between; the first sequence is exact either way.
 */
export function restoredMismatch(st: StreamState, s: Pick<ManifestStream, "state" | "grewTo">): string | undefined {
  const want = s.state;
  if (effectiveFirstSeq(st) !== effectiveFirstSeq(want)) return `first_seq is ${st.first_seq}, the artifact holds ${want.first_seq}`;
  if (st.consumer_count !== want.consumer_count) return `consumer_count is ${st.consumer_count}, the artifact holds ${want.consumer_count}`;
  if (s.grewTo === undefined) {
    for (const k of ["messages", "bytes", "last_seq"] as const) if (st[k] !== want[k]) return `${k} is ${st[k]}, the artifact holds ${want[k]}`;
    return undefined;
  }
  if (st.last_seq < want.last_seq || st.last_seq > s.grewTo) return `last_seq is ${st.last_seq}, the live snapshot holds ${want.last_seq} to ${s.grewTo}`;
  const extra = st.last_seq - want.last_seq;
  if (st.messages < want.messages || st.messages > want.messages + extra) return `messages is ${st.messages}, the live snapshot holds ${want.messages} plus at most ${extra}`;
  if (st.bytes < want.bytes) return `bytes is ${st.bytes}, the live snapshot holds at least ${want.bytes}`;
  return undefined;
}

/**
 * Uploads every snapshot (each chunk acked), then asserts messages, bytes, first/last sequence and
 * consumer counts per stream and each consumer's ack floor against the artifact, then recreates the
 * ttl buckets empty where they are absent. The namespace must hold none of the artifact's streams.
 */
export async function installArtifactStreams(nc: NatsConnection, jsm: JetStreamManager, artifactDir: string, m: BackupManifest, checkpoints: Checkpoints, progress: ProgressSink, hooks: InstallHooks): Promise<void> {
  const total = m.files.reduce((n, f) => n + f.size, 0);
  let done = 0;
  for (const s of m.streams) {
    hooks.onInstalling?.(s.name);
    await failpoint(hooks.streamFailpoint);
    const config = hooks.replicas === undefined ? s.config : { ...s.config, num_replicas: hooks.replicas };
    const got = await restoreStream(nc, join(artifactDir, s.file), { stream: s.name, config, state: s.state }, (n) => progress({ phase: hooks.phase, stream: s.name, done: (done += n), total }), hooks.upload);
    const st = await settled(hooks, async () => {
      const now = (await jsm.streams.info(s.name)).state;
      const mismatch = restoredMismatch(now, s);
      if (mismatch) throw hooks.verifyFailed(`stream ${s.name} ${mismatch} (restore reported ${JSON.stringify(got.state)})`);
      return now;
    });
    hooks.onInstalled?.(s.name, st);
    if (hooks.installedFailpoint) await failpoint(hooks.installedFailpoint);
  }
  for (const c of checkpoints.consumers) {
    await settled(hooks, async () => {
      const ci = await jsm.consumers.info(c.stream, c.name);
      if (ci.ack_floor.stream_seq !== c.ack_floor.stream_seq || ci.delivered.stream_seq !== c.delivered.stream_seq) {
        throw hooks.verifyFailed(`consumer ${c.stream}/${c.name} ack floor ${ci.ack_floor.stream_seq} (delivered ${ci.delivered.stream_seq}), checkpoint ${c.ack_floor.stream_seq} (${c.delivered.stream_seq})`);
      }
    });
  }
  const present = new Set((await listStreams(jsm)).map((i) => i.config.name));
  const kvm = new Kvm(nc);
  const tpl = spaceTemplate(m.space, hooks.replicas);
  for (const e of m.excluded) {
    const b = tpl.buckets.find((x) => x.bucket === e.bucket);
    if (b && !present.has(e.name)) await kvm.create(b.bucket, { history: b.history, ttl: b.ttlMs, storage: StorageType.File, description: b.description, replicas: b.replicas });
  }
}

/** How long a replicated restore's checks may be read again (settled). */
const REPLICATED_WAIT_MS = 15_000;

/**
 * A replicated restore's check is read again until it holds or the wait passes: 2.14 answers
 * "consumer not found" for a moment after the stream does, a loaded cluster may time a read out while
 * the new leader is elected, and that leader may answer before it has applied the snapshot's last
 * state. A single server's answer is final. The check must be safe to repeat (reads only).
 */
function settled<T>(hooks: InstallHooks, check: () => Promise<T>): Promise<T> {
  const transient = (err: unknown): boolean =>
    isCotalError(err, "restore-verify-failed") || err instanceof TimeoutError || (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound);
  return retryWhile(check, { transient, forMs: (hooks.replicas ?? 1) > 1 ? REPLICATED_WAIT_MS : 0, pauseMs: 100 });
}

/** Deletes those of `names` the namespace holds; what it deleted. */
export async function deleteStreams(jsm: JetStreamManager, names: readonly string[]): Promise<string[]> {
  const present = new Set((await listStreams(jsm)).map((i) => i.config.name));
  const gone: string[] = [];
  for (const n of names) {
    if (!present.has(n)) continue;
    await jsm.streams.delete(n);
    gone.push(n);
  }
  return gone;
}
