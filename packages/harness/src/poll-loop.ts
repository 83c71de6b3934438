import { connect, credsAuthenticator, type NodeConnectionOptions } from "@nats-io/transport-node";
import { monotonicMs, sleep } from "./clock.js";
import { nativeCredsAuthenticator } from "./creds.js";
import { handshake, handshakeTarget } from "./handshake.js";

/** One connection attempt, timed with monotonicMs() (one clock for every thread of the process). */
export interface PollAttempt {
  /** monotonicMs() when the connect began. */
  startedAt: number;
  /** monotonicMs() when the attempt resolved (after close, for a success). */
  endedAt: number;
  ok: boolean;
  /** The client's error text, e.g. "Authorization Violation" or "connection refused". */
  error?: string;
  /** The error class name, e.g. "AuthorizationError", "ConnectionError". */
  errorName?: string;
  /** A success's server (its INFO's `server_name`): which server admitted the cred, when a port may change hands. */
  server?: string;
}

/** What an attempt loop needs; plain data, so it crosses into a worker thread as is. */
export interface PollLoopConfig {
  url: string | string[];
  creds: string;
  signer: "native" | "nats";
  client: "handshake" | "nats.js";
  name: string;
  connectTimeoutMs: number;
  intervalMs: number;
  maxAttempts: number;
  maxDurationMs: number;
  /** monotonicMs() of the poller's start: the duration budget is shared by every loop. */
  startedAt: number;
}

/**
 * Shared by every loop of one poller, across threads: [0] = attempts launched, [1] = 1 once stopped
 * (by stop() or a budget). An Int32Array over a SharedArrayBuffer, updated with Atomics.
 */
export type PollControl = Int32Array;

export const LAUNCHED = 0;
export const STOPPED = 1;

export function newPollControl(): PollControl {
  return new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
}

/** Claims the next attempt, or says the poller is done (stopped, or a budget is spent). */
function claimAttempt(cfg: PollLoopConfig, control: PollControl): boolean {
  if (Atomics.load(control, STOPPED) === 1) return false;
  if (monotonicMs() - cfg.startedAt >= cfg.maxDurationMs || Atomics.add(control, LAUNCHED, 1) >= cfg.maxAttempts) {
    Atomics.store(control, STOPPED, 1);
    return false;
  }
  return true;
}

/**
 * Runs `loops` back-to-back attempt loops (a fresh TCP connection and handshake per attempt) until the
 * control says stop (or `keepGoing` says no); every outcome goes to `record`.
 */
export async function runPollLoops(cfg: PollLoopConfig, control: PollControl, loops: number, record: (a: PollAttempt) => void, keepGoing: () => boolean = () => true): Promise<void> {
  const bytes = new TextEncoder().encode(cfg.creds);
  const sign = cfg.signer === "nats" ? credsAuthenticator(bytes) : nativeCredsAuthenticator(bytes);
  const connectOpts: NodeConnectionOptions = {
    servers: cfg.url,
    authenticator: sign,
    name: cfg.name,
    reconnect: false,
    maxReconnectAttempts: 0,
    timeout: cfg.connectTimeoutMs,
    ignoreClusterUpdates: true,
    noAsyncTraces: true,
  };
  const targets = (Array.isArray(cfg.url) ? cfg.url : [cfg.url]).map(handshakeTarget);
  let next = 0;
  const attempt = async (): Promise<string | undefined> => {
    if (cfg.client === "handshake") {
      const target = targets[next++ % targets.length] as (typeof targets)[number];
      return handshake(target, sign, { name: cfg.name, timeoutMs: cfg.connectTimeoutMs });
    }
    const nc = await connect(connectOpts);
    const server = nc.info?.server_name;
    await nc.close();
    return server;
  };
  const loop = async (): Promise<void> => {
    while (keepGoing() && claimAttempt(cfg, control)) {
      const startedAt = monotonicMs();
      try {
        const server = await attempt();
        record({ startedAt, endedAt: monotonicMs(), ok: true, ...(server ? { server } : {}) });
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        record({ startedAt, endedAt: monotonicMs(), ok: false, error: e.message, errorName: e.name });
      }
      if (cfg.intervalMs > 0) await sleep(cfg.intervalMs);
    }
  };
  await Promise.all(Array.from({ length: loops }, loop));
}
