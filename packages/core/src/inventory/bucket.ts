/**
 * The shape of the authority store's two KV buckets (docs/saga.md, "The authority store"): created
 * when absent, an existing one of another shape refused and never altered.
 */
import { JetStreamApiCodes, StorageType, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { Kvm, KV } from "@nats-io/kv";
import { CotalError } from "../errors.js";
import { apiErrCode, describe, sleep, unreachable } from "./kv-errors.js";

export interface BucketSpec {
  bucket: string;
  /** max_age in ms; 0 = never expires. */
  ttlMs: number;
  replicas?: number;
}

/** Why an existing bucket's stream is not the shape cotal creates (empty when it is). */
function shapeProblems(cfg: StreamConfig, spec: BucketSpec): string[] {
  const problems: string[] = [];
  const subject = `$KV.${spec.bucket}.>`;
  if (cfg.storage !== StorageType.File) problems.push(`storage is ${String(cfg.storage)}, not file`);
  if (cfg.max_msgs_per_subject !== 1) problems.push(`history (max_msgs_per_subject) is ${cfg.max_msgs_per_subject}, not 1`);
  // Direct Get may answer from a follower; every fence here needs leader-served, read-your-writes reads.
  if (cfg.allow_direct === true) problems.push("allow_direct is true");
  if ((cfg.max_age ?? 0) !== spec.ttlMs * 1_000_000) problems.push(`max_age is ${(cfg.max_age ?? 0) / 1e6} ms, not ${spec.ttlMs} ms`);
  if (!Array.isArray(cfg.subjects) || cfg.subjects.length !== 1 || cfg.subjects[0] !== subject) problems.push(`subjects are ${JSON.stringify(cfg.subjects)}, not ["${subject}"]`);
  if (cfg.mirror || (cfg.sources?.length ?? 0) > 0) problems.push("it mirrors or sources another stream");
  if (cfg.sealed === true) problems.push("it is sealed");
  if (spec.replicas !== undefined && cfg.num_replicas !== spec.replicas) problems.push(`replicas is ${cfg.num_replicas}, not ${spec.replicas}`);
  return problems;
}

/** The two calls bucket creation needs, so the create race can be exercised without a server. */
export interface BucketApi {
  jsm: { streams: Pick<JetStreamManager["streams"], "info"> };
  kvm: Pick<Kvm, "create" | "open">;
}

async function streamConfig(jsm: BucketApi["jsm"], stream: string): Promise<StreamConfig | undefined> {
  try {
    return (await jsm.streams.info(stream)).config;
  } catch (err) {
    if (apiErrCode(err) === JetStreamApiCodes.StreamNotFound) return undefined;
    throw err;
  }
}

/** How long a losing concurrent creator keeps re-creating a bucket that is still absent (docs/saga.md). */
const CREATE_SETTLE_MS = 3_000;

/**
 * Creates the bucket when absent; an existing one of another shape is refused, never altered.
 * Several first connects race here: one creator can be answered "exists" (or succeed on the other's
 * half-made stream) while the other's add is still in flight or fails and is rolled back, so an
 * absent stream after a create is re-created until it is seen or CREATE_SETTLE_MS passes.
 */
export async function ensureBucket({ kvm, jsm }: BucketApi, spec: BucketSpec, settleMs = CREATE_SETTLE_MS): Promise<KV> {
  const stream = `KV_${spec.bucket}`;
  let cfg = await streamConfig(jsm, stream);
  const settleBy = performance.now() + settleMs;
  let lastRefusal: unknown;
  while (cfg === undefined) {
    try {
      await kvm.create(spec.bucket, { history: 1, storage: StorageType.File, allow_direct: false, ...(spec.ttlMs > 0 ? { ttl: spec.ttlMs } : {}), ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}) });
    } catch (err) {
      // A concurrent creator with another config wins the add; its shape is judged below.
      if (apiErrCode(err) === undefined) throw err;
      lastRefusal = err;
    }
    cfg = await streamConfig(jsm, stream);
    if (cfg !== undefined) break;
    if (performance.now() > settleBy) {
      const why = lastRefusal === undefined ? "" : ` (the server last answered: ${describe(lastRefusal)})`;
      throw unreachable(`create bucket ${spec.bucket}`, Object.assign(new Error(`stream ${stream} is still missing after create${why}`), { cause: lastRefusal }));
    }
    await sleep(50);
  }
  return openShaped(kvm, cfg, spec);
}

/** The bucket when it exists (of the right shape), else undefined: a reader never creates what a writer publishes. */
export async function openExistingBucket({ kvm, jsm }: BucketApi, spec: BucketSpec): Promise<KV | undefined> {
  const cfg = await streamConfig(jsm, `KV_${spec.bucket}`);
  return cfg === undefined ? undefined : openShaped(kvm, cfg, spec);
}

/** An existing bucket of another shape is refused, never altered; bound with allow_direct false. */
function openShaped(kvm: BucketApi["kvm"], cfg: StreamConfig, spec: BucketSpec): Promise<KV> {
  const stream = `KV_${spec.bucket}`;
  const problems = shapeProblems(cfg, spec);
  if (problems.length > 0) {
    throw new CotalError("inventory-corrupt", `bucket ${spec.bucket} exists with a shape cotal did not create: ${problems.join("; ")}`, {
      next: `cotal status   # then move stream ${stream} aside (cotal never alters it) and re-run; cotal recreates it with the right shape`,
      details: { bucket: spec.bucket, stream, problems },
    });
  }
  // Bound with allow_direct false: kv.get goes through $JS.API.STREAM.MSG.GET, served by the leader.
  return kvm.open(spec.bucket, { allow_direct: false });
}
