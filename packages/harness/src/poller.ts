import { connect, credsAuthenticator, type Authenticator, type NodeConnectionOptions } from "@nats-io/transport-node";
import { monotonicMs, sleep } from "./clock.js";
import { nativeCredsAuthenticator } from "./creds.js";
import { HarnessError } from "./errors.js";

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
}

export interface CredentialPollerOptions {
  /** nats:// URL (or several) of the server under test. */
  url: string | string[];
  /** Creds file text (JWT + seed), as `nsc`/cotal writes it. */
  creds: string;
  /** Pause after each attempt, per worker. 0 (default) = back to back. */
  intervalMs?: number;
  /** Workers attempting at once; each attempt is still its own fresh connection. Default 4. */
  concurrency?: number;
  /** Handshake timeout per attempt. Default 2 s. */
  connectTimeoutMs?: number;
  /** Stops by itself after this many attempts. Default 1,000,000. */
  maxAttempts?: number;
  /** Stops by itself after this long. Default 5 minutes. */
  maxDurationMs?: number;
  /** Client name the server sees (visible in its logs). Default "cotal-poller". */
  name?: string;
  /**
   * How the nonce is signed: "native" (default) uses node's Ed25519 for the same bytes nats.js
   * would send; "nats" uses nats.js `credsAuthenticator` itself (~5 ms CPU per attempt).
   */
  signer?: "native" | "nats";
}

export type WindowMode = "within" | "overlapping";

export interface PollReport {
  attempts: readonly PollAttempt[];
  total: number;
  successes: number;
  failures: number;
  /** From start() to the end of the last attempt. */
  durationMs: number;
  attemptsPerSecond: number;
  firstSuccessAt: number | undefined;
  lastSuccessAt: number | undefined;
  firstFailureAt: number | undefined;
  lastFailureAt: number | undefined;
  /** Failure count by error text. */
  errors: Record<string, number>;
  /**
   * Successful attempts in [t0, t1] (monotonicMs() marks). "within" (default) counts attempts that
   * started and ended inside the window, so each certainly authenticated inside it; "overlapping"
   * counts any that touched it, the conservative choice when asserting there were none.
   */
  successesBetween(t0: number, t1: number, mode?: WindowMode): number;
  failuresBetween(t0: number, t1: number, mode?: WindowMode): number;
}

function inWindow(a: PollAttempt, t0: number, t1: number, mode: WindowMode): boolean {
  return mode === "within" ? a.startedAt >= t0 && a.endedAt <= t1 : a.endedAt >= t0 && a.startedAt <= t1;
}

export function buildPollReport(attempts: readonly PollAttempt[], startedAt: number, endedAt: number): PollReport {
  let successes = 0;
  let firstSuccessAt: number | undefined;
  let lastSuccessAt: number | undefined;
  let firstFailureAt: number | undefined;
  let lastFailureAt: number | undefined;
  const errors: Record<string, number> = {};
  for (const a of attempts) {
    if (a.ok) {
      successes += 1;
      firstSuccessAt = firstSuccessAt === undefined ? a.endedAt : Math.min(firstSuccessAt, a.endedAt);
      lastSuccessAt = lastSuccessAt === undefined ? a.endedAt : Math.max(lastSuccessAt, a.endedAt);
    } else {
      firstFailureAt = firstFailureAt === undefined ? a.endedAt : Math.min(firstFailureAt, a.endedAt);
      lastFailureAt = lastFailureAt === undefined ? a.endedAt : Math.max(lastFailureAt, a.endedAt);
      const key = a.error ?? "unknown error";
      errors[key] = (errors[key] ?? 0) + 1;
    }
  }
  const durationMs = Math.max(endedAt - startedAt, 0);
  const count = (ok: boolean) => (t0: number, t1: number, mode: WindowMode = "within") =>
    attempts.reduce((n, a) => (a.ok === ok && inWindow(a, t0, t1, mode) ? n + 1 : n), 0);
  return {
    attempts,
    total: attempts.length,
    successes,
    failures: attempts.length - successes,
    durationMs,
    attemptsPerSecond: durationMs > 0 ? (attempts.length * 1000) / durationMs : 0,
    firstSuccessAt,
    lastSuccessAt,
    firstFailureAt,
    lastFailureAt,
    errors,
    successesBetween: count(true),
    failuresBetween: count(false),
  };
}

interface Waiter {
  pred: (a: PollAttempt) => boolean;
  resolve: (a: PollAttempt) => void;
}

/**
 * Opens a fresh connection per attempt with the given creds, as fast as it can (or every
 * `intervalMs`), recording each outcome. Built to observe the moment a server starts or stops
 * accepting a credential: connections are cheap on loopback, so attempts are dense in time.
 */
export class CredentialPoller {
  private readonly opts: Required<Omit<CredentialPollerOptions, "url" | "creds">> & Pick<CredentialPollerOptions, "url" | "creds">;
  private readonly auth: Authenticator;
  private readonly recorded: PollAttempt[] = [];
  private waiters: Waiter[] = [];
  private workers: Promise<void>[] = [];
  private active = false;
  private started = 0;
  private launched = 0;
  private lastEnd = 0;

  constructor(opts: CredentialPollerOptions) {
    this.opts = {
      intervalMs: 0,
      concurrency: 4,
      connectTimeoutMs: 2_000,
      maxAttempts: 1_000_000,
      maxDurationMs: 300_000,
      name: "cotal-poller",
      signer: "native",
      ...opts,
    };
    if (this.opts.concurrency < 1) throw new HarnessError("invalid-argument", "concurrency must be at least 1");
    const bytes = new TextEncoder().encode(opts.creds);
    this.auth = this.opts.signer === "nats" ? credsAuthenticator(bytes) : nativeCredsAuthenticator(bytes);
  }

  get running(): boolean {
    return this.active;
  }

  /** Attempts recorded so far (live array; copy it if you keep it). */
  get attempts(): readonly PollAttempt[] {
    return this.recorded;
  }

  start(): this {
    if (this.active) throw new HarnessError("invalid-state", "poller already running");
    if (this.workers.length > 0) throw new HarnessError("invalid-state", "a poller runs once; create a new one");
    this.active = true;
    this.started = monotonicMs();
    for (let i = 0; i < this.opts.concurrency; i++) this.workers.push(this.work());
    return this;
  }

  /** Stops launching attempts, waits for the ones in flight, and reports. */
  async stop(): Promise<PollReport> {
    this.active = false;
    await Promise.all(this.workers);
    return this.report();
  }

  /** A report of what has been recorded so far, without stopping. */
  report(): PollReport {
    const end = this.active ? monotonicMs() : Math.max(this.lastEnd, this.started);
    return buildPollReport(this.recorded, this.started, end);
  }

  /** Resolves with the first attempt (already recorded or future) that satisfies `pred`. */
  waitForAttempt(pred: (a: PollAttempt) => boolean, opts: { timeoutMs?: number } = {}): Promise<PollAttempt> {
    const found = this.recorded.find(pred);
    if (found) return Promise.resolve(found);
    const timeoutMs = opts.timeoutMs ?? 10_000;
    return new Promise<PollAttempt>((resolve, reject) => {
      const waiter: Waiter = {
        pred,
        resolve: (a) => {
          clearTimeout(timer);
          resolve(a);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new HarnessError("timeout", `no matching poll attempt within ${timeoutMs} ms (${this.recorded.length} recorded)`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private record(a: PollAttempt): void {
    this.recorded.push(a);
    this.lastEnd = Math.max(this.lastEnd, a.endedAt);
    if (this.waiters.length === 0) return;
    const hit = this.waiters.filter((w) => w.pred(a));
    if (hit.length === 0) return;
    this.waiters = this.waiters.filter((w) => !hit.includes(w));
    for (const w of hit) w.resolve(a);
  }

  private shouldContinue(): boolean {
    if (!this.active) return false;
    if (this.launched >= this.opts.maxAttempts || monotonicMs() - this.started >= this.opts.maxDurationMs) {
      this.active = false;
      return false;
    }
    return true;
  }

  private async work(): Promise<void> {
    const connectOpts: NodeConnectionOptions = {
      servers: this.opts.url,
      authenticator: this.auth,
      name: this.opts.name,
      reconnect: false,
      maxReconnectAttempts: 0,
      timeout: this.opts.connectTimeoutMs,
      ignoreClusterUpdates: true,
      noAsyncTraces: true,
    };
    while (this.shouldContinue()) {
      this.launched += 1;
      const startedAt = monotonicMs();
      try {
        const nc = await connect(connectOpts);
        await nc.close();
        this.record({ startedAt, endedAt: monotonicMs(), ok: true });
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        this.record({ startedAt, endedAt: monotonicMs(), ok: false, error: e.message, errorName: e.name });
      }
      if (this.opts.intervalMs > 0) await sleep(this.opts.intervalMs);
    }
  }
}
