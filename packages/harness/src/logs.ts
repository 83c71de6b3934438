import { tail, watchLogSource, type LogSource } from "@cotal/core/server-process";
import { HarnessError } from "./errors.js";

export { tail };

/** A broker's log for the harness: the core watcher's source, always with liveness and a name. */
export interface LogWatchSource extends LogSource {
  read(since: number): Promise<string>;
  /** False once the writer is gone for good, so a wait can fail fast instead of timing out. */
  alive(): boolean;
  /** For error messages. */
  describe(): string;
}

/**
 * Waits for a complete line after `since` matching `pattern`, through the core's one log watcher
 * (@cotal/core/server-process `watchLogSource`); its two endings become typed harness errors.
 */
export async function waitForLogLine(
  source: LogWatchSource,
  pattern: RegExp,
  opts: { since: number; timeoutMs: number; pollMs?: number },
): Promise<string> {
  const seen = await watchLogSource(source, opts.since, { hit: pattern }, { timeoutMs: opts.timeoutMs, pollMs: opts.pollMs ?? 10 });
  if ("outcome" in seen) return seen.line;
  const all = await source.read(opts.since);
  if (seen.ended === "exited") throw new HarnessError("exited", `${source.describe()} exited before logging ${String(pattern)}`, { logTail: tail(all) });
  throw new HarnessError("timeout", `${source.describe()} did not log ${String(pattern)} within ${opts.timeoutMs} ms`, { logTail: tail(all) });
}
