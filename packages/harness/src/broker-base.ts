import { connect as tcpConnect } from "node:net";
import {
  DEFAULT_LOG_TIMEOUT_MS,
  RELOAD_OK,
  RELOAD_VERDICT,
  type BrokerBackendKind,
  type BrokerSignal,
  type ReloadOptions,
  type ReloadOutcome,
  type WaitForLogOptions,
} from "./backend.js";
import { monotonicMs, sleep } from "./clock.js";
import { HarnessError } from "./errors.js";
import { waitForLogLine, type LogWatchSource } from "./logs.js";

/** One run of the server (a process, a container start); `done` flips synchronously on exit. */
export interface BrokerRun {
  readonly done: boolean;
}

function tcpProbe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = tcpConnect({ host, port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => {
      sock.destroy();
      resolve(false);
    });
  });
}

/**
 * Until `host:port` accepts a TCP connection: the ready log line precedes nothing a client can
 * observe, a real connect proves the listener is up. `gone()` fails fast once the server died.
 */
export async function waitForTcp(host: string, port: number, opts: { timeoutMs: number; pollMs?: number; gone?: () => boolean }): Promise<void> {
  const deadline = monotonicMs() + opts.timeoutMs;
  for (;;) {
    if (await tcpProbe(host, port)) return;
    if (opts.gone?.()) throw new HarnessError("exited", `exited right after logging readiness (${host}:${port} never accepted a connection)`);
    if (monotonicMs() > deadline) throw new HarnessError("start-timeout", `${host}:${port} never accepted a connection`);
    await sleep(opts.pollMs ?? 20);
  }
}

export interface BrokerBaseInit {
  id: string;
  port: number;
  httpPort: number | undefined;
  template: string;
}

/**
 * What the process and container brokers share: serialized reloads judged on the log after the
 * SIGHUP, log waits that fail fast once the server is gone, restart's guards, the run bookkeeping.
 * A backend supplies how to read its log, deliver a signal, install a config and start again.
 */
export abstract class BrokerBase<Run extends BrokerRun> {
  abstract readonly backend: BrokerBackendKind;
  readonly id: string;
  readonly port: number;
  readonly httpPort: number | undefined;

  protected template: string;
  protected current: Run | undefined;
  /** Set synchronously by start/restart, so a waitForLog() issued right after keeps waiting. */
  protected starting = false;
  protected disposed = false;
  private serial: Promise<unknown> = Promise.resolve();

  constructor(init: BrokerBaseInit) {
    this.id = init.id;
    this.port = init.port;
    this.httpPort = init.httpPort;
    this.template = init.template;
  }

  abstract logOffset(): Promise<number>;
  abstract logsSince(offset: number): Promise<string>;
  abstract stop(): Promise<void>;
  /** Sends `sig` to the running server. */
  protected abstract deliver(sig: BrokerSignal): Promise<void>;
  /** Renders `template` and puts it where the server reads its config, whole or not at all. */
  protected abstract installConfig(template: string): Promise<void>;
  /** Starts the stopped server again on the same config, store and port. */
  protected abstract startAgain(): Promise<void>;
  protected abstract describe(): string;
  /** Whether log lines of a dead server may still arrive (docker's log stream lags the exit). */
  protected logStillArriving(): boolean {
    return false;
  }

  /** The template (placeholders intact) the current config file was rendered from. */
  get configTemplate(): string {
    return this.template;
  }

  get running(): boolean {
    return this.current !== undefined && !this.current.done;
  }

  logs(): Promise<string> {
    return this.logsSince(0);
  }

  /** Log source whose liveness follows one run (start, reload) or, without one, the broker. */
  protected source(pinned?: Run): LogWatchSource {
    return {
      read: (since) => this.logsSince(since),
      alive: pinned ? () => !pinned.done || this.logStillArriving() : () => this.running || this.starting || this.logStillArriving(),
      describe: () => this.describe(),
    };
  }

  /** Fails fast (code "exited") once the server is down and not being (re)started. */
  waitForLog(pattern: RegExp, opts: WaitForLogOptions = {}): Promise<string> {
    return waitForLogLine(this.source(), pattern, { since: opts.since ?? 0, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
  }

  async signal(sig: BrokerSignal): Promise<void> {
    this.requireRunning(`signal ${sig}`);
    await this.deliver(sig);
  }

  reload(newConfig?: string, opts: ReloadOptions = {}): Promise<ReloadOutcome> {
    // One reload at a time: a verdict line must belong to our SIGHUP, not to a concurrent one.
    const next = this.serial.then(async (): Promise<ReloadOutcome> => {
      const run = this.requireRunning("reload");
      if (newConfig !== undefined) await this.installConfig(newConfig);
      const offset = await this.logOffset();
      await this.deliver("SIGHUP");
      const line = await waitForLogLine(this.source(run), RELOAD_VERDICT, { since: offset, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
      return line.includes(RELOAD_OK) ? "reloaded" : "failed";
    });
    this.serial = next.catch(() => undefined);
    return next;
  }

  async restart(): Promise<void> {
    if (this.disposed) throw new HarnessError("invalid-state", `broker ${this.id} is disposed`);
    if (this.starting) throw new HarnessError("invalid-state", `${this.describe()} is already starting`);
    this.starting = true;
    try {
      await this.stop();
      await this.startAgain();
    } finally {
      this.starting = false;
    }
  }

  protected requireRunning(what: string): Run {
    const run = this.current;
    if (!run || run.done) throw new HarnessError("invalid-state", `cannot ${what}: ${this.describe()} is not running`);
    return run;
  }
}
