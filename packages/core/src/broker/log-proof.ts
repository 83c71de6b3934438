import { closeSync, openSync, readSync, statSync } from "node:fs";

export const RELOAD_OK = "Reloaded server configuration";
export const RELOAD_FAILED = "Failed to reload server configuration";
export const SERVER_READY = "Server is ready";

/** 2.11+ end the success line with the digest of the config it loaded: `Reloaded server configuration (sha256:…)`. */
export function reloadLineDigest(line: string): string | undefined {
  return /Reloaded server configuration \((sha256:[0-9a-f]{64})\)/.exec(line)?.[1];
}

/** Byte length of the log now; read only what comes after it, so old lines never prove new events. */
export function logOffset(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

export function readLogSince(path: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return "";
  }
  try {
    const size = statSync(path).size;
    if (size <= offset) return "";
    const buf = Buffer.alloc(size - offset);
    const n = readSync(fd, buf, 0, buf.length, offset);
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

export function tail(text: string, lines = 15): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** Where a watched log comes from: a file here, a container's stream in the harness. */
export interface LogSource {
  /** Log text from byte offset `since` to the end. */
  read(since: number): string | Promise<string>;
  /** False once the writer is gone for good: the watch then ends with what was written before. */
  alive?(): boolean;
}

export function fileLogSource(path: string): LogSource {
  return { read: (since) => readLogSince(path, since) };
}

export type LogWatchEnd<K extends string> = { outcome: K; line: string } | { ended: "timeout" | "exited" };

/** A copy without g/y, so `test()` never carries lastIndex between lines or calls. */
function matcher(p: string | RegExp): (line: string) => boolean {
  if (typeof p === "string") return (line) => line.includes(p);
  const re = p.global || p.sticky ? new RegExp(p.source, p.flags.replace(/[gy]/g, "")) : p;
  return (line) => re.test(line);
}

/**
 * The one log watcher (cotal's proofs and the harness alike): polls `source` after `offset` until a
 * complete line (a half-written one proves nothing) matches an outcome, the writer is gone, or the
 * deadline passes. Only unread bytes are scanned each round. `idleTimeoutMs`: the deadline moves on
 * whenever the log grows (a server restoring thousands of streams logs as it goes), so only a silent
 * server times out. `pid`: only lines that server wrote.
 */
export async function watchLogSource<K extends string>(
  source: LogSource,
  offset: number,
  outcomes: Record<K, string | RegExp>,
  opts: { timeoutMs: number; pollMs?: number; abort?: () => boolean; idleTimeoutMs?: number; pid?: number },
): Promise<LogWatchEnd<K>> {
  let deadline = Date.now() + opts.timeoutMs;
  const tests = (Object.keys(outcomes) as K[]).map((k) => [k, matcher(outcomes[k])] as const);
  const prefix = opts.pid === undefined ? undefined : `[${opts.pid}] `;
  let cursor = offset;
  for (;;) {
    // Sample liveness before reading: everything written before the writer went is then in this read.
    const gone = source.alive?.() === false || opts.abort?.() === true;
    const text = await source.read(cursor);
    const end = text.lastIndexOf("\n");
    if (end >= 0) {
      for (const line of text.slice(0, end).split("\n")) {
        if (prefix && !line.startsWith(prefix)) continue;
        for (const [k, test] of tests) if (test(line)) return { outcome: k, line };
      }
      cursor += Buffer.byteLength(text.slice(0, end + 1));
      if (opts.idleTimeoutMs !== undefined) deadline = Math.max(deadline, Date.now() + opts.idleTimeoutMs);
    }
    if (gone) return { ended: "exited" };
    if (Date.now() > deadline) return { ended: "timeout" };
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 10));
  }
}

/** `watchLogSource` over a file, undefined when no outcome came (timeout or abort). */
export async function watchLog<K extends string>(
  path: string,
  offset: number,
  outcomes: Record<K, string | RegExp>,
  opts: { timeoutMs: number; pollMs?: number; abort?: () => boolean; idleTimeoutMs?: number; pid?: number },
): Promise<{ outcome: K; line: string } | undefined> {
  const seen = await watchLogSource(fileLogSource(path), offset, outcomes, opts);
  return "outcome" in seen ? seen : undefined;
}
