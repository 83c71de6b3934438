import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, open, readFile, rename, stat, writeFile } from "node:fs/promises";
import { connect as tcpConnect } from "node:net";
import { join } from "node:path";
import {
  DEFAULT_LOG_TIMEOUT_MS,
  DEFAULT_START_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  RELOAD_OK,
  RELOAD_VERDICT,
  SERVER_READY,
  nextBrokerId,
  renderConfig,
  trackBroker,
  untrackBroker,
  usesHttpPort,
  type Broker,
  type BrokerBackend,
  type BrokerSignal,
  type ReloadOptions,
  type ReloadOutcome,
  type StartSpec,
  type WaitForLogOptions,
} from "./backend.js";
import { natsServerBinary } from "./binary.js";
import { monotonicMs, sleep } from "./clock.js";
import { HarnessError, isHarnessError } from "./errors.js";
import { tail, waitForLogLine, type LogWatchSource } from "./logs.js";
import { freePort } from "./ports.js";
import { tempRoot, type TempRoot } from "./tempdir.js";

export interface ProcessBackendOptions {
  /** nats-server executable; default `natsServerBinary()`. */
  binary?: string;
  /** Until "Server is ready" and a TCP connect succeeds. Default 15 s. */
  startTimeoutMs?: number;
  /** Grace period between SIGTERM and SIGKILL in stop(). Default 10 s. */
  stopTimeoutMs?: number;
  /** Extra command-line arguments, after the ones the harness needs. */
  args?: string[];
}

// Children still running when the test process exits are killed from one 'exit' hook. Spawned in
// our process group, so a Ctrl-C at the terminal reaches them too.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function trackChild(child: ChildProcess): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const c of liveChildren) {
        try {
          c.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    });
  }
  liveChildren.add(child);
}

/** Lets the test process exit while a server runs; the exit hook then kills the server. */
function unrefStream(s: unknown): void {
  (s as { unref?: () => void } | null)?.unref?.();
}

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError?: Error;
}

interface Running {
  child: ChildProcess;
  exited: Promise<ExitInfo>;
  /** Set synchronously on exit, so liveness checks never lag the event. */
  done: boolean;
}

function safeName(name: string | undefined): string {
  return (name ?? "nats").replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40);
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

interface ProcessBrokerInit {
  id: string;
  bin: string;
  root: TempRoot;
  port: number;
  httpPort: number | undefined;
  storeDir: string;
  template: string;
  opts: ProcessBackendOptions;
}

export class ProcessBroker implements Broker {
  readonly backend = "process" as const;
  readonly id: string;
  readonly url: string;
  readonly port: number;
  readonly httpPort: number | undefined;
  readonly configPath: string;
  readonly logPath: string;
  readonly pidFile: string;
  readonly storeDir: string;
  /** The broker's private directory (config, log, pid file and, by default, the store). */
  readonly rootDir: string;

  private readonly bin: string;
  private readonly root: TempRoot;
  private readonly opts: ProcessBackendOptions;
  private template: string;
  private current: Running | undefined;
  private output = "";
  private serial: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private launching = false;

  constructor(init: ProcessBrokerInit) {
    this.id = init.id;
    this.bin = init.bin;
    this.root = init.root;
    this.opts = init.opts;
    this.port = init.port;
    this.httpPort = init.httpPort;
    this.storeDir = init.storeDir;
    this.template = init.template;
    this.rootDir = init.root.path;
    this.url = `nats://127.0.0.1:${init.port}`;
    this.configPath = join(init.root.path, "nats.conf");
    this.logPath = join(init.root.path, "nats.log");
    this.pidFile = join(init.root.path, "nats.pid");
  }

  get pid(): number | undefined {
    return this.current && !this.current.done ? this.current.child.pid : undefined;
  }

  get running(): boolean {
    return this.current !== undefined && !this.current.done;
  }

  /** stdout/stderr of the process (empty unless nats-server failed before opening its log). */
  get processOutput(): string {
    return this.output;
  }

  /** Renders and writes the config via rename, so the server never reads a half-written file. */
  async writeConfig(template: string): Promise<void> {
    const text = renderConfig(template, { PORT: this.port, HTTP_PORT: this.httpPort, STORE_DIR: this.storeDir, HOST: "127.0.0.1" });
    const tmp = `${this.configPath}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, this.configPath);
    this.template = template;
  }

  /** The template (placeholders intact) the current config file was rendered from. */
  get configTemplate(): string {
    return this.template;
  }

  async logs(): Promise<string> {
    return this.logsSince(0);
  }

  async logOffset(): Promise<number> {
    try {
      return (await stat(this.logPath)).size;
    } catch {
      return 0;
    }
  }

  async logsSince(offset: number): Promise<string> {
    if (offset <= 0) {
      try {
        return await readFile(this.logPath, "utf8");
      } catch {
        return "";
      }
    }
    let fh;
    try {
      fh = await open(this.logPath, "r");
    } catch {
      return "";
    }
    try {
      const size = (await fh.stat()).size;
      if (size <= offset) return "";
      const buf = Buffer.alloc(size - offset);
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      return buf.subarray(0, bytesRead).toString("utf8");
    } finally {
      await fh.close();
    }
  }

  /** Log source whose liveness follows one run (start, reload) or, without one, the broker. */
  private source(run?: Running): LogWatchSource {
    return {
      read: (since) => this.logsSince(since),
      alive: run ? () => !run.done : () => this.running || this.launching,
      describe: () => `nats-server ${this.id} (port ${this.port})`,
    };
  }

  /** Fails fast (code "exited") once the server is down and not being (re)started. */
  waitForLog(pattern: RegExp, opts: WaitForLogOptions = {}): Promise<string> {
    return waitForLogLine(this.source(), pattern, { since: opts.since ?? 0, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
  }

  async signal(sig: BrokerSignal): Promise<void> {
    const run = this.requireRunning(`signal ${sig}`);
    run.child.kill(sig);
  }

  reload(newConfig?: string, opts: ReloadOptions = {}): Promise<ReloadOutcome> {
    // One reload at a time: a verdict line must belong to our SIGHUP, not to a concurrent one.
    const next = this.serial.then(async (): Promise<ReloadOutcome> => {
      const run = this.requireRunning("reload");
      if (newConfig !== undefined) await this.writeConfig(newConfig);
      const offset = await this.logOffset();
      run.child.kill("SIGHUP");
      const line = await waitForLogLine(this.source(run), RELOAD_VERDICT, { since: offset, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
      return line.includes(RELOAD_OK) ? "reloaded" : "failed";
    });
    this.serial = next.catch(() => undefined);
    return next;
  }

  async stop(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    run.child.ref();
    run.child.kill("SIGTERM");
    const deadline = this.opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      run.exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), deadline);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut && !run.done) run.child.kill("SIGKILL");
    await run.exited;
  }

  async kill(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    run.child.ref();
    run.child.kill("SIGKILL");
    await run.exited;
  }

  async restart(): Promise<void> {
    if (this.disposed) throw new HarnessError("invalid-state", `broker ${this.id} is disposed`);
    if (this.launching) throw new HarnessError("invalid-state", `nats-server ${this.id} is already starting`);
    // Flagged synchronously, so a waitForLog() issued right after restart() keeps waiting.
    this.launching = true;
    try {
      await this.stop();
      await this.spawnAndWait();
    } finally {
      this.launching = false;
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    untrackBroker(this);
    try {
      await this.stop();
    } finally {
      await this.root.cleanup();
    }
  }

  private requireRunning(what: string): Running {
    const run = this.current;
    if (!run || run.done) throw new HarnessError("invalid-state", `cannot ${what}: nats-server ${this.id} is not running`);
    return run;
  }

  /** Spawns nats-server and resolves once it logged readiness and accepts a TCP connection. */
  async launch(): Promise<void> {
    if (this.running || this.launching) throw new HarnessError("invalid-state", `nats-server ${this.id} is already running`);
    this.launching = true;
    try {
      await this.spawnAndWait();
    } finally {
      this.launching = false;
    }
  }

  private async spawnAndWait(): Promise<void> {
    const timeoutMs = this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const started = monotonicMs();
    const offset = await this.logOffset();
    const args = ["-c", this.configPath, "-l", this.logPath, "-P", this.pidFile, ...(this.opts.args ?? [])];
    const child = spawn(this.bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    const run: Running = { child, done: false, exited: undefined as unknown as Promise<ExitInfo> };
    run.exited = new Promise<ExitInfo>((resolve) => {
      child.once("exit", (code, signal) => {
        run.done = true;
        liveChildren.delete(child);
        resolve({ code, signal });
      });
      child.once("error", (err) => {
        // A spawn failure (ENOENT, EACCES) has no pid and may never emit 'exit'.
        if (child.pid === undefined) {
          run.done = true;
          resolve({ code: null, signal: null, spawnError: err });
        }
      });
    });
    const capture = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString("utf8")).slice(-65_536);
    };
    child.stdout?.on("data", capture);
    child.stderr?.on("data", capture);
    trackChild(child);
    child.unref();
    unrefStream(child.stdout);
    unrefStream(child.stderr);
    this.current = run;

    try {
      await waitForLogLine(this.source(run), new RegExp(SERVER_READY), { since: offset, timeoutMs });
      // The log line precedes nothing we can observe; a real connect proves the listener is up.
      for (;;) {
        if (await tcpProbe("127.0.0.1", this.port)) break;
        if (run.done) throw new HarnessError("exited", "exited right after logging readiness");
        if (monotonicMs() - started > timeoutMs) throw new HarnessError("timeout", `port ${this.port} never accepted a connection`);
        await sleep(20);
      }
    } catch (err) {
      throw await this.startFailure(run, offset, timeoutMs, err);
    }
  }

  private async startFailure(run: Running, offset: number, timeoutMs: number, err: unknown): Promise<HarnessError> {
    if (!run.done) {
      run.child.kill("SIGKILL");
      await run.exited;
    }
    const exit = await run.exited;
    const log = await this.logsSince(offset);
    const logTail = [tail(log), this.output.trim() ? `--- stdout/stderr ---\n${tail(this.output)}` : ""].filter(Boolean).join("\n");
    if (exit.spawnError) {
      return new HarnessError("binary-missing", `cannot run ${this.bin}: ${exit.spawnError.message}`, { cause: exit.spawnError });
    }
    if (/address already in use/i.test(log) || /address already in use/i.test(this.output)) {
      return new HarnessError("port-unavailable", `port ${this.port} is taken`, { logTail, cause: err });
    }
    if (isHarnessError(err, "timeout")) {
      return new HarnessError("start-timeout", `nats-server ${this.id} was not ready within ${timeoutMs} ms`, { logTail, cause: err });
    }
    const how = exit.signal ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
    return new HarnessError("exited", `nats-server ${this.id} exited during start (${how})`, { logTail, cause: err });
  }
}

/** Runs each broker as a nats-server child process on a free loopback port, in its own temp root. */
export class ProcessBackend implements BrokerBackend {
  readonly kind = "process" as const;

  constructor(private readonly opts: ProcessBackendOptions = {}) {}

  async start(spec: StartSpec): Promise<ProcessBroker> {
    const bin = this.opts.binary ?? (await natsServerBinary());
    // A kernel-chosen port can be grabbed by someone else before nats-server binds it: retry
    // with a fresh one, but never when the caller asked for a specific port.
    const attempts = spec.port === undefined ? 3 : 1;
    for (let attempt = 1; ; attempt++) {
      const root = await tempRoot(`cotal-${safeName(spec.name)}-`);
      let broker: ProcessBroker | undefined;
      try {
        const storeDir = spec.storeDir ?? join(root.path, "store");
        await mkdir(storeDir, { recursive: true, mode: 0o700 });
        const port = spec.port ?? (await freePort());
        const httpPort = usesHttpPort(spec.config) ? await freePort() : undefined;
        broker = new ProcessBroker({ id: nextBrokerId("process", spec.name), bin, root, port, httpPort, storeDir, template: spec.config, opts: this.opts });
        await broker.writeConfig(spec.config);
        await broker.launch();
        trackBroker(broker);
        return broker;
      } catch (err) {
        if (broker) await broker.dispose().catch(() => undefined);
        else await root.cleanup();
        if (isHarnessError(err, "port-unavailable") && attempt < attempts) continue;
        throw err;
      }
    }
  }
}
