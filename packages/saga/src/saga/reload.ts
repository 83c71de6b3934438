import { RELOAD_FAILED, RELOAD_OK, logOffset, readLogSince, tail, watchLog } from "../broker/log-proof.js";
import type { BrokerRuntime } from "../broker/runtime.js";
import { unsafe } from "../unsafe.js";

export type ReloadVerdict =
  | { outcome: "reloaded"; line: string; ms: number }
  | { outcome: "failed"; line: string; logTail: string; ms: number }
  | { outcome: "unproven"; logTail: string; ms: number };

/**
 * SIGHUP, then read ONLY the log written after our signal. The success line proves the reload; a
 * failure line or no line at all is not a proof (001 §3.4 step 7). 2.9.10's success line carries no
 * digest, newer servers append one, so we match the prefix.
 */
export async function reloadAndProve(runtime: BrokerRuntime, opts: { timeoutMs?: number } = {}): Promise<ReloadVerdict> {
  const t0 = Date.now();
  const offset = unsafe("LOG_FROM_START") ? 0 : logOffset(runtime.logFile);
  try {
    process.kill(runtime.owner.pid, "SIGHUP");
  } catch (err) {
    return { outcome: "unproven", logTail: `SIGHUP to pid ${runtime.owner.pid} failed: ${(err as Error).message}`, ms: Date.now() - t0 };
  }
  const seen = await watchLog(runtime.logFile, offset, { ok: RELOAD_OK, failed: RELOAD_FAILED }, { timeoutMs: opts.timeoutMs ?? 10_000, pollMs: 5 });
  const ms = Date.now() - t0;
  if (!seen) return { outcome: "unproven", logTail: tail(readLogSince(runtime.logFile, offset)), ms };
  if (seen.outcome === "ok") return { outcome: "reloaded", line: seen.line, ms };
  return { outcome: "failed", line: seen.line, logTail: tail(readLogSince(runtime.logFile, offset)), ms };
}
