import { tail } from "@cotal/saga/server-process";
import { monotonicMs, sleep } from "./clock.js";
import { HarnessError } from "./errors.js";

export { tail };

/** A copy without g/y, so `test()` never carries lastIndex between lines or calls. */
function stateless(re: RegExp): RegExp {
  return re.global || re.sticky ? new RegExp(re.source, re.flags.replace(/[gy]/g, "")) : re;
}

export interface LogWatchSource {
  /** Log text from byte offset `since` to the end. */
  read(since: number): Promise<string>;
  /** False once the writer is gone for good, so a wait can fail fast instead of timing out. */
  alive(): boolean;
  /** For error messages. */
  describe(): string;
}

/**
 * Polls `source` until a complete line (newline-terminated: a half-written line must not match)
 * after `since` matches `pattern`. Only unread bytes are scanned on each round.
 */
export async function waitForLogLine(
  source: LogWatchSource,
  pattern: RegExp,
  opts: { since: number; timeoutMs: number; pollMs?: number },
): Promise<string> {
  const re = stateless(pattern);
  const deadline = monotonicMs() + opts.timeoutMs;
  let cursor = opts.since;
  for (;;) {
    // Sample liveness before reading: everything written before death is then in this read.
    const wasAlive = source.alive();
    const text = await source.read(cursor);
    const end = text.lastIndexOf("\n");
    if (end >= 0) {
      const complete = text.slice(0, end);
      for (const line of complete.split("\n")) if (re.test(line)) return line;
      cursor += Buffer.byteLength(text.slice(0, end + 1));
    }
    if (!wasAlive) {
      const all = await source.read(opts.since);
      throw new HarnessError("exited", `${source.describe()} exited before logging ${String(pattern)}`, { logTail: tail(all) });
    }
    if (monotonicMs() > deadline) {
      const all = await source.read(opts.since);
      throw new HarnessError("timeout", `${source.describe()} did not log ${String(pattern)} within ${opts.timeoutMs} ms`, { logTail: tail(all) });
    }
    await sleep(opts.pollMs ?? 10);
  }
}
