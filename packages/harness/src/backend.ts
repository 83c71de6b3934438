import { RELOAD_FAILED, RELOAD_OK, SERVER_READY } from "@cotal/core/server-process";
import { HarnessError } from "./errors.js";

export type BrokerBackendKind = "process" | "container";
export type BrokerSignal = "SIGHUP" | "SIGTERM" | "SIGINT" | "SIGKILL";
export type ReloadOutcome = "reloaded" | "failed";

/**
 * What to run. `config` is the full nats-server config text and may use these placeholders, which
 * the backend fills in: `{{PORT}}` (client port), `{{HTTP_PORT}}` (monitoring port, allocated only
 * when used), `{{STORE_DIR}}` (JetStream store dir) and `{{HOST}}` (the address to listen on:
 * 127.0.0.1 for a process, 0.0.0.0 inside a container).
 */
export interface BrokerSpec {
  config: string;
  /** JetStream store directory; default: a fresh temp dir owned (and removed) by the broker. */
  storeDir?: string;
  /** Shows up in the broker id and temp dir names; helps when reading a failing test. */
  name?: string;
}

export interface StartSpec extends BrokerSpec {
  /** Client port to use; default: a free loopback port. */
  port?: number;
}

export interface WaitForLogOptions {
  /** Byte offset from `logOffset()`; only lines written after it count. Default 0 (the whole log). */
  since?: number;
  /** Default 10 s. */
  timeoutMs?: number;
}

export interface ReloadOptions {
  /** How long to wait for the server's verdict after SIGHUP. Default 10 s. */
  timeoutMs?: number;
}

export interface Broker {
  readonly id: string;
  /** nats://host:port, stable across restart(). */
  readonly url: string;
  readonly port: number;
  /** Monitoring port when the config used `{{HTTP_PORT}}`. */
  readonly httpPort: number | undefined;
  readonly backend: BrokerBackendKind;
  /** The file the server reads (inside the container for the container backend). */
  readonly configPath: string;
  /** The config text (placeholders intact) the current config file was rendered from. */
  readonly configTemplate: string;
  /** OS pid while running (process backend only). */
  readonly pid: number | undefined;
  /** Whether the server is running as far as the harness knows (it tracks every exit). */
  readonly running: boolean;

  /** The full log text so far, across restarts. */
  logs(): Promise<string>;
  /** Byte length of the log now, so callers can read only what comes after. */
  logOffset(): Promise<number>;
  logsSince(offset: number): Promise<string>;
  /** Resolves with the first complete log line after `since` matching `pattern`. */
  waitForLog(pattern: RegExp, opts?: WaitForLogOptions): Promise<string>;
  signal(sig: BrokerSignal): Promise<void>;
  /**
   * Optionally rewrites the config (atomically, placeholders filled in as at start), sends SIGHUP,
   * then reads only log written after the signal for the server's verdict.
   */
  reload(newConfig?: string, opts?: ReloadOptions): Promise<ReloadOutcome>;
  /** Graceful stop (SIGTERM, SIGKILL after a deadline); resolves once the server has exited. */
  stop(): Promise<void>;
  /** SIGKILL; resolves once the server has exited. */
  kill(): Promise<void>;
  /** Starts again on the same config, store and port (stopping first if still running). */
  restart(): Promise<void>;
  /** Stops the server if running and removes everything the broker created. Idempotent. */
  dispose(): Promise<void>;
}

export interface BrokerBackend {
  readonly kind: BrokerBackendKind;
  start(spec: StartSpec): Promise<Broker>;
}

// The log lines are the core's (broker/log-proof.ts): one set for cotal and its tests.
export { RELOAD_FAILED, RELOAD_OK, SERVER_READY };
/** Matches either reload verdict; group 1 tells which. */
export const RELOAD_VERDICT = new RegExp(`(${RELOAD_OK}|${RELOAD_FAILED})`);

export const DEFAULT_LOG_TIMEOUT_MS = 10_000;
export const DEFAULT_START_TIMEOUT_MS = 15_000;
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;

export interface ConfigVars {
  PORT: number;
  STORE_DIR: string;
  HOST: string;
  HTTP_PORT?: number;
}

const PLACEHOLDER = /\{\{\s*([A-Z_]+)\s*\}\}/g;

/** Whether the template asks for a monitoring port (so one is allocated only when needed). */
export function usesHttpPort(template: string): boolean {
  return /\{\{\s*HTTP_PORT\s*\}\}/.test(template);
}

/**
 * Fills the placeholders. An unknown one is an error now rather than a confusing parse failure
 * inside nats-server later.
 */
export function renderConfig(template: string, vars: ConfigVars): string {
  const values: Record<string, string | undefined> = {
    PORT: String(vars.PORT),
    STORE_DIR: vars.STORE_DIR,
    HOST: vars.HOST,
    HTTP_PORT: vars.HTTP_PORT === undefined ? undefined : String(vars.HTTP_PORT),
  };
  const unknown = new Set<string>();
  const unset = new Set<string>();
  const out = template.replace(PLACEHOLDER, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) {
      (name in values ? unset : unknown).add(name);
      return whole;
    }
    return v;
  });
  const list = (names: Set<string>): string => [...names].map((n) => `{{${n}}}`).join(", ");
  if (unknown.size > 0) throw new HarnessError("invalid-argument", `config uses unknown placeholder(s): ${list(unknown)}`);
  // A port is allocated at start; a reload cannot introduce one the broker never reserved.
  if (unset.size > 0) throw new HarnessError("invalid-argument", `config uses ${list(unset)} but the broker was started without it`);
  return out;
}

/** Every broker not yet disposed, so a suite teardown can reach the ones a failing test leaked. */
const liveBrokers = new Set<Broker>();

export function trackBroker(b: Broker): void {
  liveBrokers.add(b);
}

export function untrackBroker(b: Broker): void {
  liveBrokers.delete(b);
}

/** Disposes every broker this process started and has not disposed yet. */
export async function disposeAllBrokers(): Promise<void> {
  const errors: unknown[] = [];
  await Promise.all(
    [...liveBrokers].map((b) =>
      b.dispose().catch((e: unknown) => {
        errors.push(e);
      }),
    ),
  );
  if (errors.length > 0) throw new AggregateError(errors, "some brokers failed to dispose");
}

let brokerSeq = 0;

export function nextBrokerId(kind: BrokerBackendKind, name: string | undefined): string {
  brokerSeq += 1;
  return `${name ?? "nats"}-${kind}-${process.pid}-${brokerSeq}`;
}
