import { createHash } from "node:crypto";
import { closeSync, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import { SagaError } from "../errors.js";
import { failpoint } from "../failpoints.js";

/** The JetStream stream config and state as the server reports them (kept verbatim in the manifest). */
export interface StreamState {
  messages: number;
  bytes: number;
  first_seq: number;
  last_seq: number;
  consumer_count: number;
}

/**
 * The sequence the next message of a stream gets: what `first_seq` means, read so that servers that
 * spell an empty stream differently agree. A never-written stream reports first_seq 0; 2.15 restores
 * it as first_seq 1, last_seq 0 (measured on 2.15.3; 2.9.10 and 2.14.10 keep 0). Both are "empty, next 1".
 */
export function effectiveFirstSeq(s: Pick<StreamState, "messages" | "first_seq" | "last_seq">): number {
  return s.messages === 0 ? s.last_seq + 1 : s.first_seq;
}

export interface SnapshotFile {
  stream: string;
  config: Record<string, unknown>;
  state: StreamState;
  size: number;
  sha256: string;
  chunks: number;
}

const API_TIMEOUT_MS = 10_000;
/** The server gives up after ~2 s without our ack; we give up after this long without a chunk. */
const CHUNK_IDLE_MS = 15_000;

async function api<T>(nc: NatsConnection, subject: string, body: unknown, timeout = API_TIMEOUT_MS): Promise<T & { error?: { code: number; err_code?: number; description: string } }> {
  const m = await nc.request(subject, typeof body === "string" ? body : JSON.stringify(body), { timeout });
  return m.json();
}

function apiFailure(what: string, stream: string, e: { code: number; err_code?: number; description: string }): SagaError {
  return new SagaError("snapshot-failed", `${what} of stream ${stream} refused by the server: ${e.description} (${e.code}${e.err_code ? `/${e.err_code}` : ""})`, {
    exit: "read the isolated broker log under maintenance/attempt-<id>/, then run the command again",
    details: { stream, error: e },
  });
}

/**
 * `$JS.API.STREAM.SNAPSHOT.<stream>` (nats.js 3.x has no client for it): chunks arrive on our
 * deliver subject, each acknowledged by replying to its reply subject (the server stops sending when
 * too many bytes are unacked: flow control); the end is an empty message whose status header says
 * whether the snapshot completed. The bytes (tar + s2, opaque to us) go to `file`, fsynced.
 */
export async function snapshotStream(nc: NatsConnection, stream: string, file: string, onBytes: (n: number) => void, chunkSize = 128 * 1024): Promise<SnapshotFile> {
  const deliver = createInbox();
  const sub = nc.subscribe(deliver);
  await failpoint("backup-snapshot-start");
  const resp = await api<{ config: Record<string, unknown>; state: StreamState }>(nc, `$JS.API.STREAM.SNAPSHOT.${stream}`, { deliver_subject: deliver, chunk_size: chunkSize, jsck: true, no_consumers: false });
  if (resp.error) {
    sub.unsubscribe();
    throw apiFailure("snapshot", stream, resp.error);
  }
  const fd = openSync(file, "wx", 0o600);
  const hash = createHash("sha256");
  let size = 0;
  let chunks = 0;
  let idle: NodeJS.Timeout | undefined;
  let timedOut = false;
  const arm = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      timedOut = true;
      sub.unsubscribe();
    }, CHUNK_IDLE_MS);
  };
  let status: { code: number; description: string } | undefined;
  try {
    arm();
    for await (const m of sub) {
      arm();
      if (m.data.length === 0) {
        status = { code: m.headers?.code ?? 0, description: m.headers?.description ?? "" };
        break;
      }
      let off = 0;
      while (off < m.data.length) off += writeSync(fd, m.data, off, m.data.length - off);
      hash.update(m.data);
      size += m.data.length;
      chunks++;
      onBytes(m.data.length);
      if (chunks === 1) await failpoint("backup-first-chunk");
      if (m.reply) m.respond(); // the ack that lets the server send the next window
    }
    if (timedOut) throw new SagaError("snapshot-failed", `snapshot of ${stream} stalled: no chunk for ${CHUNK_IDLE_MS} ms`, { exit: "run the command again" });
    if (status && status.code !== 0 && status.code !== 204 && status.code !== 200) {
      throw new SagaError("snapshot-failed", `snapshot of ${stream} ended with status ${status.code} ${status.description}`, { exit: "run the command again" });
    }
    await failpoint("backup-snapshot-close");
    fsyncSync(fd);
  } finally {
    clearTimeout(idle);
    sub.unsubscribe();
    closeSync(fd);
  }
  return { stream, config: resp.config, state: resp.state, size, sha256: hash.digest("hex"), chunks };
}

/**
 * `$JS.API.STREAM.RESTORE.<stream>`: the reply names a deliver subject; each chunk is a request
 * the server acknowledges, and an empty request ends the upload and returns the stream's info.
 */
export async function restoreStream(nc: NatsConnection, file: string, manifest: { stream: string; config: Record<string, unknown>; state: StreamState }, onBytes: (n: number) => void, chunkSize = 128 * 1024): Promise<{ state: StreamState }> {
  const { stream } = manifest;
  const resp = await api<{ deliver_subject: string }>(nc, `$JS.API.STREAM.RESTORE.${stream}`, { config: manifest.config, state: manifest.state });
  if (resp.error) throw apiFailure("restore", stream, resp.error);
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(chunkSize);
    for (;;) {
      const n = readSync(fd, buf, 0, chunkSize, null);
      if (n === 0) break;
      await nc.request(resp.deliver_subject, buf.subarray(0, n), { timeout: API_TIMEOUT_MS });
      onBytes(n);
    }
  } finally {
    closeSync(fd);
  }
  const done = await nc.request(resp.deliver_subject, new Uint8Array(0), { timeout: 120_000 });
  const info = done.json<{ state?: StreamState; error?: { code: number; err_code?: number; description: string } }>();
  if (info.error) throw apiFailure("restore", stream, info.error);
  if (!info.state) throw new SagaError("snapshot-failed", `restore of ${stream} returned no stream state`, { exit: "run the command again" });
  return { state: info.state };
}
