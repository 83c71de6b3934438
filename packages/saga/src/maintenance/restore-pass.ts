import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, StorageType, type StreamInfo } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { SagaError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { connectAsAccount } from "../broker/connect.js";
import { spaceTemplate } from "../provision/template.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import type { BackupManifest, Checkpoints, ManifestFile } from "./artifact.js";
import type { Attempt } from "./attempt.js";
import { startIsolatedBroker } from "./isolated-broker.js";
import type { ProgressSink } from "./progress.js";
import { effectiveFirstSeq, restoreStream, snapshotStream } from "./stream-snapshot.js";

export type RestorePass = "quarantine" | "target";

/**
 * A stream the restore may replace: a ttl-class bucket (recreated empty anyway) or a freshly
 * provisioned, never-used template stream (`space add` provisions them). Anything holding data or
 * consumers means the namespace is not empty, and restore does not merge.
 */
function replaceable(info: StreamInfo, space: string, ttl: string[]): boolean {
  if (ttl.includes(info.config.name)) return true;
  const tpl = spaceTemplate(space);
  const names = [...tpl.streams.map((s) => s.name), ...tpl.buckets.map((b) => `KV_${b.bucket}`)];
  return names.includes(info.config.name) && info.state.messages === 0 && info.state.last_seq === 0 && info.state.consumer_count === 0;
}

/** The quarantine's re-snapshot: the artifact the target pass installs. */
export interface Rehearsed {
  artifactDir: string;
  manifest: BackupManifest;
}

async function resnapshot(nc: NatsConnection, m: BackupManifest, dir: string, progress: ProgressSink): Promise<Rehearsed> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files: ManifestFile[] = [];
  let done = 0;
  for (const s of m.streams) {
    mkdirSync(dirname(join(dir, s.file)), { recursive: true, mode: 0o700 });
    const snap = await snapshotStream(nc, s.name, join(dir, s.file), (n) => progress({ phase: "quarantine", stream: s.name, done: (done += n), total: Math.max(done, 1) }));
    files.push({ path: s.file, size: snap.size, sha256: snap.sha256 });
  }
  return { artifactDir: dir, manifest: { ...m, files } };
}

function verifyFailed(pass: RestorePass, why: string): SagaError {
  return new SagaError("restore-verify-failed", `${pass} restore did not reproduce the artifact: ${why}`, {
    next: pass === "quarantine" ? "nothing was changed; take a fresh backup" : "cotal clean restore-attempt --attempt <id>   # removes the streams this attempt installed",
    details: { pass, reason: why },
  });
}

/**
 * One restore pass through an isolated broker on `storeDir`: refuse a non-empty namespace, drop the
 * replaceable streams, upload every snapshot (each chunk acked), recreate ttl buckets empty, then
 * assert messages, bytes, first/last sequence, consumer counts and ack floors against the artifact.
 */
export async function runRestorePass(layout: RootLayout, pass: RestorePass, storeDir: string, account: AccountRecord, artifactDir: string, m: BackupManifest, checkpoints: Checkpoints, attempt: Attempt, progress: ProgressSink): Promise<Rehearsed | undefined> {
  const broker = await startIsolatedBroker(layout, { storeDir, workDir: attempt.workDir, space: account, label: `restore-${pass}`, onSpawn: (o) => attempt.broker(o) });
  try {
    const nc = await connectAsAccount(broker.url, account, { name: `cotal-restore-${pass}-${m.space}`, reconnect: false, ttlSeconds: 3600 });
    try {
      const jsm = await jetstreamManager(nc);
      const ttl = m.excluded.map((e) => e.name);
      const existing: StreamInfo[] = [];
      for await (const si of jsm.streams.list()) existing.push(si);
      const occupied = existing.filter((i) => !replaceable(i, m.space, ttl));
      if (occupied.length > 0) {
        throw new SagaError("restore-target-not-empty", `space ${m.space} already has streams: ${occupied.map((i) => `${i.config.name} (${i.state.messages} messages, ${i.state.consumer_count} consumers)`).join(", ")}; restore fills an empty namespace only`, {
          next: `cotal up && cotal space rm ${m.space} && cotal space add ${m.space} && cotal down --preserve-state   # then restore again`,
          details: { streams: occupied.map((i) => i.config.name) },
        });
      }
      await failpoint(`restore-${pass}-begin`);
      for (const i of existing) await jsm.streams.delete(i.config.name);
      const total = m.files.reduce((n, f) => n + f.size, 0);
      let done = 0;
      for (const s of m.streams) {
        if (pass === "target") attempt.installing(s.name);
        await failpoint(`restore-${pass}-stream`);
        const got = await restoreStream(nc, join(artifactDir, s.file), { stream: s.name, config: s.config, state: s.state }, (n) => progress({ phase: pass, stream: s.name, done: (done += n), total }));
        const st = (await jsm.streams.info(s.name)).state;
        for (const k of ["messages", "bytes", "first_seq", "last_seq", "consumer_count"] as const) {
          const differs = k === "first_seq" ? effectiveFirstSeq(st) !== effectiveFirstSeq(s.state) : st[k] !== s.state[k];
          if (differs) throw verifyFailed(pass, `stream ${s.name} ${k} is ${st[k]}, the artifact holds ${s.state[k]} (restore reported ${got.state[k]})`);
        }
      }
      for (const c of checkpoints.consumers) {
        const ci = await jsm.consumers.info(c.stream, c.name);
        if (ci.ack_floor.stream_seq !== c.ack_floor.stream_seq || ci.delivered.stream_seq !== c.delivered.stream_seq) {
          throw verifyFailed(pass, `consumer ${c.stream}/${c.name} ack floor ${ci.ack_floor.stream_seq} (delivered ${ci.delivered.stream_seq}), checkpoint ${c.ack_floor.stream_seq} (${c.delivered.stream_seq})`);
        }
      }
      const kvm = new Kvm(nc);
      const tpl = spaceTemplate(m.space);
      for (const e of m.excluded) {
        const b = tpl.buckets.find((x) => x.bucket === e.bucket);
        if (b) await kvm.create(b.bucket, { history: b.history, ttl: b.ttlMs, storage: StorageType.File, description: b.description });
      }
      await failpoint(`restore-${pass}-verified`);
      // The target installs what this server re-snapshots from the verified quarantine, never the
      // staged bytes themselves: only bytes this server produced from a proven restore reach the store.
      if (pass === "quarantine") return await resnapshot(nc, m, join(attempt.workDir, "resnap"), progress);
      return undefined;
    } finally {
      await nc.close();
    }
  } finally {
    await broker.stop();
  }
}
