import type { ChildProcess } from "node:child_process";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, logOffset, readLogSince, spawnServer, stopProcess, untilReady, type ServerChild } from "@cotal/core/server-process";
import {
  DEFAULT_START_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  nextBrokerId,
  renderConfig,
  trackBroker,
  untrackBroker,
  usesHttpPort,
  type Broker,
  type BrokerBackend,
  type BrokerSignal,
  type StartSpec,
} from "./backend.js";
import { natsServerBinary } from "./binary.js";
import { BrokerBase, waitForTcp } from "./broker-base.js";
import { monotonicMs } from "./clock.js";
import { HarnessError, isHarnessError } from "./errors.js";
import { tail } from "./logs.js";
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

function safeName(name: string | undefined): string {
  return (name ?? "nats").replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 40);
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

export class ProcessBroker extends BrokerBase<ServerChild> implements Broker {
  readonly backend = "process" as const;
  readonly url: string;
  readonly configPath: string;
  readonly logPath: string;
  readonly pidFile: string;
  readonly storeDir: string;
  /** The broker's private directory (config, log, pid file and, by default, the store). */
  readonly rootDir: string;

  private readonly bin: string;
  private readonly root: TempRoot;
  private readonly opts: ProcessBackendOptions;
  private output = "";

  constructor(init: ProcessBrokerInit) {
    super({ id: init.id, port: init.port, httpPort: init.httpPort, template: init.template });
    this.bin = init.bin;
    this.root = init.root;
    this.opts = init.opts;
    this.storeDir = init.storeDir;
    this.rootDir = init.root.path;
    this.url = `nats://127.0.0.1:${init.port}`;
    this.configPath = join(init.root.path, "nats.conf");
    this.logPath = join(init.root.path, "nats.log");
    this.pidFile = join(init.root.path, "nats.pid");
  }

  get pid(): number | undefined {
    return this.current && !this.current.done ? this.current.pid : undefined;
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

  protected installConfig(template: string): Promise<void> {
    return this.writeConfig(template);
  }

  async logOffset(): Promise<number> {
    return logOffset(this.logPath);
  }

  async logsSince(offset: number): Promise<string> {
    return readLogSince(this.logPath, Math.max(offset, 0));
  }

  protected describe(): string {
    return `nats-server ${this.id} (port ${this.port})`;
  }

  protected async deliver(sig: BrokerSignal): Promise<void> {
    this.requireRunning(`signal ${sig}`).child.kill(sig);
  }

  async stop(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    run.child.ref();
    await stopProcess(run.pid, this.opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS, () => run.done);
    await run.exited;
  }

  async kill(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    run.child.ref();
    run.child.kill("SIGKILL");
    await run.exited;
  }

  protected startAgain(): Promise<void> {
    return this.spawnAndWait();
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

  /** Spawns nats-server and resolves once it logged readiness and accepts a TCP connection. */
  async launch(): Promise<void> {
    if (this.running || this.starting) throw new HarnessError("invalid-state", `nats-server ${this.id} is already running`);
    this.starting = true;
    try {
      await this.spawnAndWait();
    } finally {
      this.starting = false;
    }
  }

  private async spawnAndWait(): Promise<void> {
    const timeoutMs = this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const started = monotonicMs();
    const offset = await this.logOffset();
    const args = ["-c", this.configPath, "-l", this.logPath, "-P", this.pidFile, ...(this.opts.args ?? [])];
    // The harness's files stay readable to the test (no umask 077); its output is captured.
    const run = await spawnServer(this.bin, args, { output: "pipe", privateFiles: false });
    const child = run.child;
    void run.exited.then(() => liveChildren.delete(child));
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

    // The core's readiness rule: this child's own ready line, after our offset.
    if (!(await untilReady(run, this.logPath, offset, timeoutMs))) throw await this.startFailure(run, offset, timeoutMs, !run.done);
    try {
      await waitForTcp("127.0.0.1", this.port, { timeoutMs: Math.max(timeoutMs - (monotonicMs() - started), 0), gone: () => run.done });
    } catch (err) {
      throw await this.startFailure(run, offset, timeoutMs, isHarnessError(err, "start-timeout"), err);
    }
  }

  private async startFailure(run: ServerChild, offset: number, timeoutMs: number, timedOut: boolean, err?: unknown): Promise<HarnessError> {
    if (!run.done) {
      run.child.kill("SIGKILL");
      await run.exited;
    }
    const exit = await run.exited;
    const log = await this.logsSince(offset);
    const logTail = [tail(log, 20), this.output.trim() ? `--- stdout/stderr ---\n${tail(this.output, 20)}` : ""].filter(Boolean).join("\n");
    if (/address already in use/i.test(log) || /address already in use/i.test(this.output)) {
      return new HarnessError("port-unavailable", `port ${this.port} is taken`, { logTail, cause: err });
    }
    if (timedOut) {
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
