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

/**
 * Polls the log after `offset` until a line matches one of `outcomes`, `abort()` says stop, or the
 * deadline passes. Returns the outcome key and the matching line, or undefined on timeout/abort.
 * `idleTimeoutMs`: the deadline moves on whenever the log grows (a server restoring thousands of
 * streams logs as it goes), so only a silent server times out. `pid`: only lines that server wrote.
 */
export async function watchLog<K extends string>(
  path: string,
  offset: number,
  outcomes: Record<K, string>,
  opts: { timeoutMs: number; pollMs?: number; abort?: () => boolean; idleTimeoutMs?: number; pid?: number },
): Promise<{ outcome: K; line: string } | undefined> {
  let deadline = Date.now() + opts.timeoutMs;
  const keys = Object.keys(outcomes) as K[];
  const prefix = opts.pid === undefined ? undefined : `[${opts.pid}] `;
  let seen = 0;
  for (;;) {
    const text = readLogSince(path, offset);
    for (const line of text.split("\n")) {
      if (prefix && !line.startsWith(prefix)) continue;
      for (const k of keys) if (line.includes(outcomes[k])) return { outcome: k, line };
    }
    if (opts.idleTimeoutMs !== undefined && text.length > seen) {
      seen = text.length;
      deadline = Math.max(deadline, Date.now() + opts.idleTimeoutMs);
    }
    if (opts.abort?.() || Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 10));
  }
}
