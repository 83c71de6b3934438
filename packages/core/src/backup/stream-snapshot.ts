import { GUARDS_ON, type Guards } from "../guards.js";
import { createHash } from "node:crypto";
import { closeSync, fdatasync, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { createInbox, NoRespondersError, RequestError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { RERUN, CotalError, isCotalError } from "../errors.js";
import { FailpointError, failpoint } from "../failpoints.js";
import { retryWhile } from "../retry.js";

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

function apiFailure(what: string, stream: string, e: { code: number; err_code?: number; description: string }): CotalError {
  return new CotalError("snapshot-failed", `${what} of stream ${stream} refused by the server: ${e.description} (${e.code}${e.err_code ? `/${e.err_code}` : ""})`, {
    next: `${RERUN}   # the private broker's log is under maintenance/attempt-*/`,
    details: { stream, error: e },
  });
}

/** The end marker's status: 204 on current servers; 2.9.10 sends it with no status at all. */
const SNAPSHOT_DONE = [0, 200, 204];

/** `<ack prefix>.<chunk length>.<chunk index>`: what the server says it sent in this chunk. */
export function chunkAnnouncement(reply: string | undefined): { length: number; index: number } | undefined {
  if (!reply) return undefined;
  const parts = reply.split(".");
  const length = Number(parts[parts.length - 2]);
  const index = Number(parts[parts.length - 1]);
  return Number.isInteger(length) && Number.isInteger(index) && length >= 0 && index >= 1 ? { length, index } : undefined;
}

function incomplete(stream: string, why: string): CotalError {
  return new CotalError("snapshot-failed", `the snapshot of stream ${stream} is incomplete: ${why}; no manifest was written`, {
    next: `${RERUN}   # the private broker may have died: its log is under maintenance/attempt-*/`,
    details: { stream, why },
  });
}

/** Bytes written between two background flushes of a snapshot file. */
const FLUSH_EVERY = 8 * 1024 * 1024;

/**
 * Flushes a growing file in libuv's pool while chunks keep arriving, so the fsync before the
 * manifest finds little left to write (BENCHMARKS.md: 64 MB left ~33 ms of fsync after the last
 * chunk). A background flush's error is kept and thrown by `drain`: the kernel reports a write-back
 * error once, so the final fsync alone could miss it.
 */
export class BackgroundFlush {
  private inFlight: Promise<void> | undefined;
  private unflushed = 0;
  private failure: Error | undefined;
  constructor(
    private readonly fd: number,
    private readonly file: string,
    private readonly every = FLUSH_EVERY,
    private readonly sync: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void = fdatasync,
  ) {}

  wrote(n: number): void {
    this.unflushed += n;
    if (this.unflushed < this.every || this.inFlight) return;
    this.unflushed = 0;
    this.inFlight = new Promise((done) =>
      this.sync(this.fd, (err) => {
        if (err) this.failure ??= err;
        this.inFlight = undefined;
        done();
      }),
    );
  }

  /** Waits for the flush in flight (the fd must stay open until then); throws a flush's error. */
  async drain(): Promise<void> {
    await this.inFlight;
    if (this.failure) throw new CotalError("snapshot-failed", `writing ${this.file} failed: ${this.failure.message}; no manifest was written`, { next: RERUN, cause: this.failure });
  }
}

export interface SnapshotOptions {
  /** The server's chunk (128 KiB: the mid-stream failpoint cells count 16 of them). */
  chunkSize?: number;
  /** `jsck`: the server verifies every message's checksum before it sends a byte (a corrupted store is refused, not backed up). */
  check?: boolean;
  /** The verb's guards (SKIP_STORE_CHECK, ACCEPT_PARTIAL_SNAPSHOT; docs/ablation.md). */
  guards?: Guards;
  /** Flush the file in the background as it grows (BackgroundFlush); else all of it after the end marker. */
  earlyFlush?: boolean;
}

/**
 * `$JS.API.STREAM.SNAPSHOT.<stream>` (nats.js 3.x has no client for it): chunks arrive on our
 * deliver subject, each acknowledged by replying to its reply subject (the server stops sending when
 * too many bytes are unacked: flow control); the end is an empty message whose status header says
 * whether the snapshot completed. The bytes (tar + s2, opaque to us) go to `file`, fsynced.
 */
export async function snapshotStream(nc: NatsConnection, stream: string, file: string, onBytes: (n: number) => void, opts: SnapshotOptions = {}): Promise<SnapshotFile> {
  const { chunkSize = 128 * 1024, earlyFlush = true } = opts;
  const guards = opts.guards ?? GUARDS_ON;
  const check = (opts.check ?? true) && !guards.SKIP_STORE_CHECK;
  const deliver = createInbox();
  const sub = nc.subscribe(deliver);
  await failpoint("backup-snapshot-start");
  let resp: Awaited<ReturnType<typeof api<{ config: Record<string, unknown>; state: StreamState }>>>;
  try {
    resp = await api<{ config: Record<string, unknown>; state: StreamState }>(nc, `$JS.API.STREAM.SNAPSHOT.${stream}`, { deliver_subject: deliver, chunk_size: chunkSize, jsck: check, no_consumers: false });
  } catch (err) {
    if (!nc.isClosed()) sub.unsubscribe();
    throw incomplete(stream, `the snapshot request failed (${(err as Error).message})`);
  }
  if (resp.error) {
    sub.unsubscribe();
    throw apiFailure("snapshot", stream, resp.error);
  }
  const fd = openSync(file, "wx", 0o600);
  const flush = earlyFlush ? new BackgroundFlush(fd, file) : undefined;
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
  let unannounced = 0;
  try {
    arm();
    for await (const m of sub) {
      arm();
      if (m.data.length === 0) {
        status = { code: m.headers?.code ?? 0, description: m.headers?.description ?? "" };
        break;
      }
      // Each chunk's reply subject announces its length and index; only the last may carry none.
      const announced = chunkAnnouncement(m.reply);
      if (announced === undefined) unannounced++;
      else if (announced.index !== chunks + 1 || announced.length !== m.data.length || unannounced > 0) {
        throw incomplete(stream, `chunk ${chunks + 1} arrived as ${m.reply ? `index ${announced.index}, ${announced.length} bytes` : "unannounced"} with ${m.data.length} bytes`);
      }
      let off = 0;
      while (off < m.data.length) off += writeSync(fd, m.data, off, m.data.length - off);
      flush?.wrote(m.data.length);
      hash.update(m.data);
      size += m.data.length;
      chunks++;
      onBytes(m.data.length);
      if (m.reply) m.respond(); // the ack that lets the server send the next window
      if (chunks === 1) await failpoint("backup-first-chunk");
      if (chunks === 16) await failpoint("backup-mid-stream"); // 2 MiB in: only a large stream gets here
    }
    if (timedOut) throw new CotalError("snapshot-failed", `snapshot of ${stream} stalled: no chunk for ${CHUNK_IDLE_MS} ms`, { next: RERUN });
    // Only the server's own end marker completes a snapshot; a closed connection is not an end.
    if (!status && !guards.ACCEPT_PARTIAL_SNAPSHOT) throw incomplete(stream, `the server's end marker never arrived after ${chunks} chunks (${size} bytes)`);
    if (status && !SNAPSHOT_DONE.includes(status.code)) throw incomplete(stream, `it ended with status ${status.code} ${status.description}`);
    if (unannounced > 1) throw incomplete(stream, `${unannounced} chunks arrived without the server's announcement`);
    await failpoint("backup-snapshot-close");
    await flush?.drain();
    fsyncSync(fd);
  } catch (err) {
    await flush?.drain().catch(() => undefined); // the fd is closed below: no flush may still use it
    if (isCotalError(err) || err instanceof FailpointError) throw err;
    // The test-only switch takes what arrived as the whole stream: the partial backup this refusal prevents.
    if (!guards.ACCEPT_PARTIAL_SNAPSHOT) throw incomplete(stream, `the connection failed mid-snapshot (${(err as Error).message})`);
  } finally {
    clearTimeout(idle);
    if (!nc.isClosed()) sub.unsubscribe();
    closeSync(fd);
  }
  return { stream, config: resp.config, state: resp.state, size, sha256: hash.digest("hex"), chunks };
}

/**
 * The upload's chunk: the server's cost is per chunk, so larger is faster (BENCHMARKS.md: 64 KiB
 * 0.43×, 128 KiB 0.57×, 512 KiB 0.64× natscli at 256 MB): 1 MiB, or the whole max_payload where
 * that is smaller (a chunk carries no headers, so the payload alone counts; the boundaries mean
 * nothing to the server).
 */
export function restoreChunkSize(maxPayload: number | undefined): number {
  return Math.max(1024, Math.min(1024 * 1024, maxPayload ?? 1024 * 1024));
}

/**
 * Upload chunks sent before the first of them is acknowledged. The server takes each restore chunk
 * in order on the sending connection (written to its staging file or restore pipe, then acked), so
 * a window keeps the link busy where one round trip per chunk left it idle under load
 * (BENCHMARKS.md, "the restore's upload"); 4 × 1 MiB stays far under the 64 MiB a client may have pending.
 */
export const RESTORE_IN_FLIGHT = 4;

export interface RestoreOptions {
  /** Bytes per upload chunk (default restoreChunkSize of the server's max_payload). */
  chunkSize?: number;
  /** Chunks awaiting the server's ack at once (default RESTORE_IN_FLIGHT; 1 = one round trip per chunk). */
  inFlight?: number;
}

/**
 * How long the first upload chunk may meet "no responders": on a cluster the restore's deliver
 * subject is subscribed on the node that took the request, and its interest reaches the node this
 * connection is on over the route a moment later (seen under load in CI; docs/backup.md).
 */
export const RESTORE_INTEREST_MS = 5_000;

const noResponders = (err: unknown): boolean => err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders());

/** The first chunk, sent again while nobody listens yet (a chunk that met no responders reached no server). */
const firstChunk = (nc: NatsConnection, subject: string, data: Uint8Array): Promise<Msg> =>
  retryWhile(() => nc.request(subject, data, { timeout: API_TIMEOUT_MS }), { transient: noResponders, forMs: RESTORE_INTEREST_MS, pauseMs: 100 });

/**
 * `$JS.API.STREAM.RESTORE.<stream>`: the reply names a deliver subject; each chunk is a request
 * the server acknowledges with an empty reply (anything else is its refusal), up to `inFlight` at
 * once, and an empty request ends the upload and returns the stream's info.
 */
export async function restoreStream(nc: NatsConnection, file: string, manifest: { stream: string; config: Record<string, unknown>; state: StreamState }, onBytes: (n: number) => void, opts: RestoreOptions = {}): Promise<{ state: StreamState }> {
  const { stream } = manifest;
  const chunkSize = opts.chunkSize ?? restoreChunkSize(nc.info?.max_payload);
  const window = Math.max(1, opts.inFlight ?? RESTORE_IN_FLIGHT);
  const resp = await api<{ deliver_subject: string }>(nc, `$JS.API.STREAM.RESTORE.${stream}`, { config: manifest.config, state: manifest.state });
  if (resp.error) throw apiFailure("restore", stream, resp.error);
  // Every chunk's promise handles its own failure (none may reject unobserved); the first is kept.
  let failure: CotalError | undefined;
  const acked = (n: number) => (m: { data: Uint8Array; json: <T>() => T }) => {
    if (m.data.length === 0) return onBytes(n);
    let e: { code: number; err_code?: number; description: string } | undefined;
    try {
      e = m.json<{ error?: typeof e }>().error;
    } catch {
      // not JSON: 2.9.10 answers a failed write with a bare -ERR text
    }
    failure ??= apiFailure("restore", stream, e ?? { code: 500, description: new TextDecoder().decode(m.data).slice(0, 200) });
  };
  const lost = (err: unknown) => {
    failure ??= new CotalError("snapshot-failed", `restore of ${stream}: a chunk was not acknowledged (${(err as Error).message})`, { next: RERUN, cause: err });
  };
  const pending: Promise<void>[] = [];
  let first = true;
  const fd = openSync(file, "r");
  try {
    while (!failure) {
      const buf = Buffer.allocUnsafe(chunkSize); // its own buffer: the chunks in flight must not be overwritten
      const n = readSync(fd, buf, 0, chunkSize, null);
      if (n === 0) break;
      const chunk = buf.subarray(0, n);
      pending.push((first ? firstChunk(nc, resp.deliver_subject, chunk) : nc.request(resp.deliver_subject, chunk, { timeout: API_TIMEOUT_MS })).then(acked(n), lost));
      // The first chunk goes alone: once it is acked, the deliver subject's interest is known here.
      if (first || pending.length >= window) await pending.shift();
      first = false;
    }
    await Promise.all(pending);
  } finally {
    closeSync(fd);
  }
  if (failure) throw failure;
  const done = await nc.request(resp.deliver_subject, new Uint8Array(0), { timeout: 120_000 });
  const info = done.json<{ state?: StreamState; error?: { code: number; err_code?: number; description: string } }>();
  if (info.error) throw apiFailure("restore", stream, info.error);
  if (!info.state) throw new CotalError("snapshot-failed", `restore of ${stream} returned no stream state`, { next: RERUN });
  return { state: info.state };
}
