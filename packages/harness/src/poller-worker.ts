/**
 * A CredentialPoller worker thread: runs its share of the attempt loops on its own event loop and
 * posts every attempt back in small batches (the timestamps are taken here, on the shared clock).
 */
import { parentPort, workerData } from "node:worker_threads";
import { runPollLoops, type PollAttempt, type PollControl, type PollLoopConfig } from "./poll-loop.js";

export interface PollWorkerData {
  cfg: PollLoopConfig;
  control: PollControl;
  loops: number;
}

/** Messages to the parent: "ready" as the loops start, batches of attempts, then exactly one "done" (or "failed"). */
export type PollWorkerMessage = { kind: "ready" } | { kind: "attempts"; attempts: PollAttempt[] } | { kind: "done" } | { kind: "failed"; error: string };

const FLUSH_MS = 5;
const port = parentPort;
if (!port) throw new Error("poller-worker runs only as a worker thread");
const { cfg, control, loops } = workerData as PollWorkerData;

let batch: PollAttempt[] = [];
const flush = (): void => {
  if (batch.length === 0) return;
  port.postMessage({ kind: "attempts", attempts: batch } satisfies PollWorkerMessage);
  batch = [];
};
const timer = setInterval(flush, FLUSH_MS);
port.postMessage({ kind: "ready" } satisfies PollWorkerMessage);

runPollLoops(cfg, control, loops, (a) => {
  batch.push(a);
  if (batch.length >= 256) flush();
}).then(
  () => {
    clearInterval(timer);
    flush();
    port.postMessage({ kind: "done" } satisfies PollWorkerMessage);
  },
  (err: unknown) => {
    clearInterval(timer);
    flush();
    port.postMessage({ kind: "failed", error: err instanceof Error ? err.message : String(err) } satisfies PollWorkerMessage);
  },
);
