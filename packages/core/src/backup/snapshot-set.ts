/**
 * The artifact body both backup paths write (docs/resume.md: offline after a cut, online while the
 * tenant is quiesced): each durable stream's snapshot and its consumers' checkpoints, then
 * manifest.json last and atomically. Only what makes a stream "changed" differs, so the caller says.
 */
import { type Guards } from "../guards.js";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { fsyncDir, writeJsonAtomic } from "../root/secret-files.js";
import { ARTIFACT_FORMAT, CHECKPOINTS_FILE, MANIFEST_FILE, sha256File, type BackupManifest, type Checkpoints, type ConsumerCheckpoint, type ManifestStream } from "./artifact.js";
import type { ProgressSink } from "./progress.js";
import { snapshotStream, type SnapshotOptions } from "./stream-snapshot.js";
import { mapPaced } from "../pool.js";

export interface SnapshotSet {
  streams: ManifestStream[];
  files: BackupManifest["files"];
  consumers: ConsumerCheckpoint[];
}

export async function checkpointsOf(jsm: JetStreamManager, stream: string): Promise<ConsumerCheckpoint[]> {
  const out: ConsumerCheckpoint[] = [];
  for await (const c of jsm.consumers.list(stream)) {
    out.push({
      stream,
      name: c.name,
      ack_floor: { consumer_seq: c.ack_floor.consumer_seq, stream_seq: c.ack_floor.stream_seq },
      delivered: { consumer_seq: c.delivered.consumer_seq, stream_seq: c.delivered.stream_seq },
      num_ack_pending: c.num_ack_pending,
      num_pending: c.num_pending,
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** How the set is read: the bench compares these (BENCHMARKS.md, "the transfer"); the defaults are what backups use. */
export interface SnapshotTuning {
  /** Streams snapshotted at once (each is one server-side snapshot and its own flow-control window). */
  parallel?: number;
  /** Per snapshot: the server's checksum pass and the background flush (stream-snapshot.ts). */
  snapshot?: SnapshotOptions;
}

/** A space has two durable template streams; a tenant's own streams beyond them wait for a slot. */
const SNAPSHOT_PARALLEL = 3;

/**
 * How a set's snapshots relate to the tenant's writes: `still` (a cut or a quiesce: a snapshot that did
 * not see exactly the state listed before it is refused with `changed`, since the artifact would not be
 * the space at one moment) or `live` (the tenant writes meanwhile: each stream is read at its own
 * moment, the growth during its snapshot recorded as `grewTo`, and no consumer checkpoint is taken,
 * since consumers move too: their state travels inside each snapshot).
 */
export type SnapshotMode = { kind: "still"; changed: (stream: string, before: number, after: number) => CotalError } | { kind: "live" };

/**
 * Snapshots `durable` into `out/streams/` (the dir `out` must exist), up to `parallel` at once, the
 * set in `durable`'s order whatever finished first; every snapshot has ended (completed or failed)
 * before this returns or throws, so a caller's clean-up never races a writer.
 */
export async function snapshotDurableStreams(nc: NatsConnection, jsm: JetStreamManager, out: string, durable: readonly StreamInfo[], progress: ProgressSink, mode: SnapshotMode, guards: Guards, tuning: SnapshotTuning = {}): Promise<SnapshotSet> {
  const dir = join(out, "streams");
  mkdirSync(dir, { mode: 0o700 });
  const total = durable.reduce((n, i) => n + i.state.bytes, 0);
  let done = 0;
  const consumers: ConsumerCheckpoint[] = [];
  if (mode.kind === "still") for (const info of durable) consumers.push(...(await checkpointsOf(jsm, info.config.name)));
  const one = async (info: StreamInfo) => {
    const name = info.config.name;
    const rel = `streams/${name}.snap`;
    const snap = await snapshotStream(nc, name, join(out, rel), (n) => progress({ phase: "snapshot", stream: name, done: (done += n), total: Math.max(total, done) }), { ...tuning.snapshot, guards });
    const stream: ManifestStream = { name, class: "durable", file: rel, config: snap.config, state: snap.state };
    if (mode.kind === "still") {
      if (snap.state.messages !== info.state.messages || snap.state.last_seq !== info.state.last_seq) throw mode.changed(name, info.state.messages, snap.state.messages);
    } else {
      const after = (await jsm.streams.info(name)).state.last_seq;
      if (after !== snap.state.last_seq) stream.grewTo = after;
    }
    return { stream, file: { path: rel, size: snap.size, sha256: snap.sha256 } };
  };
  // mapPaced: on a failure nothing new starts and the snapshots in flight settle before it rejects.
  const got = await mapPaced(durable, () => tuning.parallel ?? SNAPSHOT_PARALLEL, one);
  fsyncDir(dir); // each file is fsynced; their names in streams/ are durable before the manifest names them
  return { streams: got.map((g) => g.stream), files: got.map((g) => g.file), consumers };
}

/** checkpoints.json, then (after the `backup-manifest` failpoint) manifest.json: the completion marker, last. */
export async function publishArtifact(out: string, set: SnapshotSet, head: Pick<BackupManifest, "space" | "accountPublicKey" | "cutId" | "attemptId" | "excluded" | "consistency">): Promise<BackupManifest> {
  const checkpoints: Checkpoints = { format: "cotal.checkpoints/1", space: head.space, consumers: set.consumers };
  writeJsonAtomic(join(out, CHECKPOINTS_FILE), checkpoints);
  const files = [...set.files, { path: CHECKPOINTS_FILE, ...sha256File(join(out, CHECKPOINTS_FILE)) }];
  const manifest: BackupManifest = { format: ARTIFACT_FORMAT, space: head.space, accountPublicKey: head.accountPublicKey, cutId: head.cutId, attemptId: head.attemptId, createdAt: new Date().toISOString(), ...(head.consistency ? { consistency: head.consistency } : {}), streams: set.streams, excluded: head.excluded, files };
  await failpoint("backup-manifest");
  writeJsonAtomic(join(out, MANIFEST_FILE), manifest);
  return manifest;
}
