import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { monotonicMs } from "./clock.js";
import { nativeCredsAuthenticator } from "./creds.js";
import { credpollBinary, runCredpoll } from "./credpoll.js";
import { HarnessError } from "./errors.js";
import { newPollControl, runPollLoops, STOPPED, type PollAttempt, type PollControl, type PollLoopConfig } from "./poll-loop.js";
import type { PollWorkerData, PollWorkerMessage } from "./poller-worker.js";

export type { PollAttempt } from "./poll-loop.js";

export interface CredentialPollerOptions {
  /** nats:// URL (or several) of the server under test. */
  url: string | string[];
  /** Creds file text (JWT + seed), as `nsc`/cotal writes it. */
  creds: string;
  /** Pause after each attempt, per worker. 0 (default) = back to back. */
  intervalMs?: number;
  /** Attempts in flight at once, over all threads (each its own fresh connection); enough to hide scheduling latency on a loaded machine. Default 32. */
  concurrency?: number;
  /**
   * Worker threads that share the loops (one event loop caps a poller at a few hundred attempts/s).
   * 0 runs them on the caller's event loop. Default: 2, or 1 on a one-core machine.
   */
  threads?: number;
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
  /**
   * What one attempt is: "handshake" (default) connects a fresh TCP socket and runs the NATS
   * connect handshake (INFO, CONNECT with the signed nonce, PING, then PONG or -ERR); "nats.js"
   * does a full nats.js connect() and close(), about ten times the CPU per attempt.
   */
  client?: "handshake" | "nats.js";
  /**
   * Where the handshake loops run: "go" in tools/credpoll (a third of Node's CPU per attempt; built
   * by infra/credpoll.sh), "node" on worker threads. "auto" (default) takes go when the binary is
   * built and the attempt is the native-signed handshake, else node. `threads` applies to node only.
   */
  engine?: "auto" | PollEngine;
}

export type PollEngine = "go" | "node";

export type WindowMode = "within" | "overlapping";

export interface PollReport {
  attempts: readonly PollAttempt[];
  total: number;
  successes: number;
  failures: number;
  /** From start() to the end of the last attempt. */
  durationMs: number;
  /**
   * monotonicMs() when stop() was called (or the report taken, while running), or the last answer
   * if one came after it (stop() waits for the attempts in flight): the end of the time the caller
   * meant to cover, later than the last attempt when a budget ended the poll early.
   */
  stoppedAt: number;
  attemptsPerSecond: number;
  firstSuccessAt: number | undefined;
  lastSuccessAt: number | undefined;
  firstFailureAt: number | undefined;
  lastFailureAt: number | undefined;
  /** Failure count by error text. */
  errors: Record<string, number>;
  /** Where the attempt loops ran. */
  engine: PollEngine;
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

export function buildPollReport(attempts: readonly PollAttempt[], startedAt: number, endedAt: number, engine: PollEngine = "node", stoppedAt: number = endedAt): PollReport {
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
    stoppedAt,
    attemptsPerSecond: durationMs > 0 ? (attempts.length * 1000) / durationMs : 0,
    firstSuccessAt,
    lastSuccessAt,
    firstFailureAt,
    lastFailureAt,
    errors,
    engine,
    successesBetween: count(true),
    failuresBetween: count(false),
  };
}

interface Waiter {
  pred: (a: PollAttempt) => boolean;
  resolve: (a: PollAttempt) => void;
}

/** The built worker: next to this file in dist, or in dist when the harness runs from src (vitest). */
function workerUrl(): URL {
  const sibling = new URL("./poller-worker.js", import.meta.url);
  return existsSync(sibling) ? sibling : new URL("../dist/poller-worker.js", import.meta.url);
}

/**
 * Opens a fresh connection per attempt with the given creds, as fast as it can (or every
 * `intervalMs`), recording each outcome. Built to observe the moment a server starts or stops
 * accepting a credential: connections are cheap on loopback, so attempts are dense in time. The
 * loops run on worker threads and stream their attempts back; each is timed where it ran.
 */
export class CredentialPoller {
  private readonly opts: Required<Omit<CredentialPollerOptions, "url" | "creds" | "engine">> & Pick<CredentialPollerOptions, "url" | "creds">;
  /** The resolved engine, and credpoll's path when it is go. */
  readonly engine: PollEngine;
  private readonly credpoll: string | undefined;
  private readonly recorded: PollAttempt[] = [];
  private waiters: Waiter[] = [];
  private workers: Promise<void>[] = [];
  private control: PollControl = newPollControl();
  private failures: string[] = [];
  private readyThreads = 0;
  private active = false;
  private started = 0;
  private lastEnd = 0;
  private stopAskedAt: number | undefined;

  constructor(opts: CredentialPollerOptions) {
    this.opts = {
      intervalMs: 0,
      concurrency: 32,
      threads: Math.min(2, availableParallelism()),
      connectTimeoutMs: 2_000,
      maxAttempts: 1_000_000,
      maxDurationMs: 300_000,
      name: "cotal-poller",
      signer: "native",
      client: "handshake",
      ...opts,
    };
    const wanted = opts.engine ?? "auto";
    const goCapable = this.opts.client === "handshake" && this.opts.signer === "native";
    const bin = wanted === "node" || !goCapable ? undefined : credpollBinary();
    if (wanted === "go" && !goCapable) throw new HarnessError("invalid-argument", "the go engine runs the native-signed handshake only (client: handshake, signer: native)");
    if (wanted === "go" && bin === undefined) throw new HarnessError("invalid-argument", "the go engine is not built: run bash infra/credpoll.sh install (or set COTAL_CREDPOLL_BIN)");
    this.credpoll = bin;
    this.engine = bin === undefined ? "node" : "go";
    if (!Number.isInteger(this.opts.concurrency) || this.opts.concurrency < 1) throw new HarnessError("invalid-argument", "concurrency must be an integer of at least 1");
    if (!Number.isInteger(this.opts.threads) || this.opts.threads < 0) throw new HarnessError("invalid-argument", "threads must be a non-negative integer");
    nativeCredsAuthenticator(opts.creds); // bad creds text is refused here, not inside a thread
  }

  /** False once stopped or once a budget (maxAttempts, maxDurationMs) is spent. */
  get running(): boolean {
    return this.active && Atomics.load(this.control, STOPPED) === 0;
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
    const { url, creds, signer, client, name, connectTimeoutMs, intervalMs, maxAttempts, maxDurationMs, concurrency, threads } = this.opts;
    const cfg: PollLoopConfig = { url, creds, signer, client, name, connectTimeoutMs, intervalMs, maxAttempts, maxDurationMs, startedAt: this.started };
    if (this.credpoll !== undefined) {
      // credpoll runs within milliseconds (a thread takes 0.1-0.5 s): no Node loop bridges its start.
      this.workers.push(runCredpoll(this.credpoll, cfg, this.control, concurrency, (a) => this.record(a)).catch((e: Error) => void this.failures.push(e.message)));
      return this;
    }
    if (threads === 0) {
      this.workers.push(runPollLoops(cfg, this.control, concurrency, (a) => this.record(a)));
      return this;
    }
    const n = Math.min(threads, concurrency);
    for (let i = 0; i < n; i++) {
      const loops = Math.floor(concurrency / n) + (i < concurrency % n ? 1 : 0);
      this.workers.push(this.spawn({ cfg, control: this.control, loops }));
    }
    // A thread takes 0.1-0.5 s to load; poll from here until every one is up, so no start is blind.
    this.workers.push(runPollLoops(cfg, this.control, Math.min(concurrency, 4), (a) => this.record(a), () => this.readyThreads < n));
    return this;
  }

  /** Stops launching attempts, waits for the ones in flight, and reports. */
  async stop(): Promise<PollReport> {
    this.stopAskedAt ??= monotonicMs();
    Atomics.store(this.control, STOPPED, 1);
    await Promise.all(this.workers);
    // A budget clears `running` at its last launch, so stop() may come before that attempt's answer.
    this.stopAskedAt = Math.max(this.stopAskedAt, this.lastEnd);
    this.active = false;
    if (this.failures.length > 0) throw new HarnessError("invalid-state", `a poller thread failed: ${this.failures.join("; ")}`);
    return this.report();
  }

  /** A report of what has been recorded so far, without stopping. */
  report(): PollReport {
    const now = monotonicMs();
    const end = this.active ? now : Math.max(this.lastEnd, this.started);
    return buildPollReport(this.recorded, this.started, end, this.engine, this.stopAskedAt ?? (this.active ? now : end));
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

  /** One worker thread; resolves when it has posted its last attempt and exited. */
  private spawn(data: PollWorkerData): Promise<void> {
    return new Promise<void>((resolve) => {
      const worker = new Worker(workerUrl(), { workerData: data });
      let finished = false;
      worker.on("message", (m: PollWorkerMessage) => {
        if (m.kind === "ready") this.readyThreads += 1;
        else if (m.kind === "attempts") for (const a of m.attempts) this.record(a);
        else {
          finished = true;
          if (m.kind === "failed") this.failures.push(m.error);
        }
      });
      worker.on("error", (err) => {
        this.failures.push(err.message);
        Atomics.store(this.control, STOPPED, 1);
      });
      worker.on("exit", (code) => {
        if (!finished && this.failures.length === 0) this.failures.push(`worker exited with code ${code} before finishing`);
        resolve();
      });
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
}
