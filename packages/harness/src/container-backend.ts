import { connect as tcpConnect } from "node:net";
import type { Readable } from "node:stream";
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from "testcontainers";
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
import { monotonicMs, sleep } from "./clock.js";
import { HarnessError } from "./errors.js";
import { tail, waitForLogLine, type LogWatchSource } from "./logs.js";
import { freePort } from "./ports.js";
import { dockerAvailable } from "./docker.js";

export const DEFAULT_NATS_IMAGE = "nats:2.9.10-alpine";

export interface ContainerBackendOptions {
  /** Default: `NATS_IMAGE`, else nats:2.9.10-alpine. */
  image?: string;
  /** Until "Server is ready" and a TCP connect succeeds (image pull excluded). Default 15 s. */
  startTimeoutMs?: number;
  /** Grace period docker stop gives between SIGTERM and SIGKILL. Default 10 s. */
  stopTimeoutMs?: number;
  /** Extra nats-server arguments after `-c <config>`. */
  args?: string[];
}

/** Inside the container. Only flags are passed as the command, so both the alpine image (whose
 * entrypoint prepends `nats-server` to flag-only commands) and the scratch image work. */
const CONFIG_PATH = "/etc/nats/cotal.conf";
const STORE_DIR = "/data/jetstream";

/**
 * A server in a container listens on all interfaces or the port mapping cannot reach it, so a
 * loopback listen address bound to a harness port becomes 0.0.0.0. Configs meant for both
 * backends should prefer `{{HOST}}`.
 */
export function containerizeConfig(template: string): string {
  return template.replace(/(?:127\.0\.0\.1|localhost)(?=:\{\{\s*(?:PORT|HTTP_PORT)\s*\}\})/g, "0.0.0.0");
}

/** Accumulates the docker log stream; one stream per container start, since docker ends it on exit. */
class ContainerLog {
  private text = "";
  private open = 0;

  attach(stream: Readable): void {
    this.open += 1;
    let closed = false;
    const done = (): void => {
      if (closed) return;
      closed = true;
      this.open -= 1;
    };
    stream.on("data", (chunk: string | Buffer) => {
      this.text += typeof chunk === "string" ? chunk : chunk.toString("utf8");
    });
    stream.on("end", done);
    stream.on("close", done);
    stream.on("error", done);
  }

  /** Whether any log stream is still delivering (the last lines of a dead server arrive late). */
  get streaming(): boolean {
    return this.open > 0;
  }

  get all(): string {
    return this.text;
  }

  byteLength(): number {
    return Buffer.byteLength(this.text);
  }

  since(offset: number): string {
    if (offset <= 0) return this.text;
    return Buffer.from(this.text, "utf8").subarray(offset).toString("utf8");
  }
}

interface ContainerRun {
  exited: Promise<void>;
  done: boolean;
}

type DockerContainer = ReturnType<Awaited<ReturnType<typeof getContainerRuntimeClient>>["container"]["getById"]>;

export class ContainerBroker implements Broker {
  readonly backend = "container" as const;
  readonly id: string;
  readonly url: string;
  readonly port: number;
  readonly httpPort: number | undefined;
  readonly configPath = CONFIG_PATH;
  readonly pid = undefined;
  readonly containerId: string;

  private readonly started: StartedTestContainer;
  private readonly docker: DockerContainer;
  private readonly log: ContainerLog;
  private readonly opts: ContainerBackendOptions;
  private template: string;
  private current: ContainerRun | undefined;
  private serial: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private restarting = false;

  constructor(init: {
    id: string;
    started: StartedTestContainer;
    docker: DockerContainer;
    log: ContainerLog;
    port: number;
    httpPort: number | undefined;
    template: string;
    opts: ContainerBackendOptions;
  }) {
    this.id = init.id;
    this.started = init.started;
    this.docker = init.docker;
    this.log = init.log;
    this.port = init.port;
    this.httpPort = init.httpPort;
    this.template = init.template;
    this.opts = init.opts;
    this.containerId = init.started.getId();
    this.url = `nats://${init.started.getHost()}:${init.started.getMappedPort(init.port)}`;
    this.current = this.watchExit();
  }

  get configTemplate(): string {
    return this.template;
  }

  get running(): boolean {
    return this.current !== undefined && !this.current.done;
  }

  /** Resolves when the container stops (docker's wait endpoint blocks until then). */
  private watchExit(): ContainerRun {
    const run: ContainerRun = { done: false, exited: Promise.resolve() };
    run.exited = this.docker.wait().then(
      () => {
        run.done = true;
      },
      () => {
        run.done = true;
      },
    );
    return run;
  }

  render(template: string): string {
    return renderConfig(containerizeConfig(template), { PORT: this.port, HTTP_PORT: this.httpPort, STORE_DIR, HOST: "0.0.0.0" });
  }

  async logs(): Promise<string> {
    return this.log.all;
  }

  async logOffset(): Promise<number> {
    return this.log.byteLength();
  }

  async logsSince(offset: number): Promise<string> {
    return this.log.since(offset);
  }

  private source(pinned?: ContainerRun): LogWatchSource {
    return {
      read: async (since) => this.log.since(since),
      // Dead only once the server stopped and docker delivered its last lines.
      alive: pinned ? () => !pinned.done || this.log.streaming : () => this.running || this.restarting || this.log.streaming,
      describe: () => `nats-server container ${this.id}`,
    };
  }

  /** Fails fast (code "exited") once the server is down and not being restarted. */
  waitForLog(pattern: RegExp, opts: WaitForLogOptions = {}): Promise<string> {
    return waitForLogLine(this.source(), pattern, { since: opts.since ?? 0, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
  }

  async signal(sig: BrokerSignal): Promise<void> {
    this.requireRunning(`signal ${sig}`);
    // The docker kill API, not `exec kill`: PID 1 cannot be SIGKILLed from inside its namespace.
    await this.docker.kill({ signal: sig });
  }

  reload(newConfig?: string, opts: ReloadOptions = {}): Promise<ReloadOutcome> {
    const next = this.serial.then(async (): Promise<ReloadOutcome> => {
      this.requireRunning("reload");
      if (newConfig !== undefined) {
        // The copy completes before SIGHUP, so the server never reads a partial file.
        await this.started.copyContentToContainer([{ content: this.render(newConfig), target: CONFIG_PATH, mode: 0o644 }]);
        this.template = newConfig;
      }
      // Docker delivers logs with a lag, so bytes read after this offset could in principle be
      // older than the SIGHUP; reloads are serialized, so none of them is an earlier verdict.
      const offset = this.log.byteLength();
      await this.docker.kill({ signal: "SIGHUP" });
      const line = await waitForLogLine(this.source(this.current), RELOAD_VERDICT, { since: offset, timeoutMs: opts.timeoutMs ?? DEFAULT_LOG_TIMEOUT_MS });
      return line.includes(RELOAD_OK) ? "reloaded" : "failed";
    });
    this.serial = next.catch(() => undefined);
    return next;
  }

  async stop(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    const client = await getContainerRuntimeClient();
    // docker stop: SIGTERM, SIGKILL after the timeout; the container is kept for restart().
    await client.container.stop(this.docker, { timeout: this.opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS });
    await run.exited;
  }

  async kill(): Promise<void> {
    const run = this.current;
    if (!run || run.done) return;
    await this.docker.kill({ signal: "SIGKILL" });
    await run.exited;
  }

  async restart(): Promise<void> {
    if (this.disposed) throw new HarnessError("invalid-state", `broker ${this.id} is disposed`);
    if (this.restarting) throw new HarnessError("invalid-state", `container ${this.id} is already restarting`);
    // Flagged synchronously, so a waitForLog() issued right after restart() keeps waiting.
    this.restarting = true;
    try {
      await this.stop();
      await this.startAgain();
    } finally {
      this.restarting = false;
    }
  }

  private async startAgain(): Promise<void> {
    const before = monotonicMs();
    // docker restart of a stopped container starts it with the same writable layer (the store),
    // the same fixed port binding, and testcontainers re-runs the log wait strategy.
    await this.started.restart();
    const client = await getContainerRuntimeClient();
    const inspect = await client.container.inspect(this.docker);
    const since = new Date(inspect.State.StartedAt).getTime() / 1000;
    this.log.attach(await this.started.logs({ since }));
    this.current = this.watchExit();
    await waitForTcp(this.started.getHost(), this.started.getMappedPort(this.port), (this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS) - (monotonicMs() - before));
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    untrackBroker(this);
    await this.started.stop({ remove: true, removeVolumes: true, timeout: this.opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS });
  }

  private requireRunning(what: string): void {
    if (!this.running) throw new HarnessError("invalid-state", `cannot ${what}: container ${this.id} is not running`);
  }
}

async function waitForTcp(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = monotonicMs() + Math.max(timeoutMs, 1_000);
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = tcpConnect({ host, port });
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (monotonicMs() > deadline) throw new HarnessError("start-timeout", `${host}:${port} never accepted a connection`);
    await sleep(50);
  }
}

/**
 * Runs each broker in a container via testcontainers. The config is copied in, the client port is
 * published on the same host port number (so {{PORT}} means the same inside and out, and
 * restart() keeps it), and logs come from the docker log stream. The JetStream store lives in the
 * container's writable layer (kept across stop/kill/restart until dispose) unless `storeDir` is
 * given, which is then bind-mounted.
 */
export class ContainerBackend implements BrokerBackend {
  readonly kind = "container" as const;
  readonly image: string;

  constructor(private readonly opts: ContainerBackendOptions = {}) {
    this.image = opts.image ?? process.env.NATS_IMAGE ?? DEFAULT_NATS_IMAGE;
  }

  async start(spec: StartSpec): Promise<ContainerBroker> {
    if (!(await dockerAvailable())) throw new HarnessError("docker-unavailable", "no Docker engine answered");
    const port = spec.port ?? (await freePort());
    const httpPort = usesHttpPort(spec.config) ? await freePort() : undefined;
    const config = renderConfig(containerizeConfig(spec.config), { PORT: port, HTTP_PORT: httpPort, STORE_DIR, HOST: "0.0.0.0" });
    const timeoutMs = this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const log = new ContainerLog();

    let container = new GenericContainer(this.image)
      .withCommand(["-c", CONFIG_PATH, ...(this.opts.args ?? [])])
      .withCopyContentToContainer([{ content: config, target: CONFIG_PATH, mode: 0o644 }])
      .withExposedPorts(...[port, httpPort].filter((p): p is number => p !== undefined).map((p) => ({ container: p, host: p })))
      .withWaitStrategy(Wait.forLogMessage(SERVER_READY))
      .withStartupTimeout(timeoutMs)
      .withLogConsumer((stream) => log.attach(stream));
    if (spec.storeDir) container = container.withBindMounts([{ source: spec.storeDir, target: STORE_DIR, mode: "rw" }]);
    if (spec.name) container = container.withLabels({ "cotal.harness.name": spec.name });

    let started: StartedTestContainer;
    try {
      started = await container.start();
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      const logTail = tail(log.all);
      if (/address already in use|port is already allocated/i.test(`${msg}\n${log.all}`)) {
        throw new HarnessError("port-unavailable", `port ${port} is taken: ${msg}`, { cause: err, logTail });
      }
      const code = /not received|timed? ?out/i.test(msg) ? "start-timeout" : "exited";
      throw new HarnessError(code, `container ${this.image} did not become ready: ${msg}`, { cause: err, logTail });
    }
    const client = await getContainerRuntimeClient();
    const broker = new ContainerBroker({
      id: nextBrokerId("container", spec.name),
      started,
      docker: client.container.getById(started.getId()),
      log,
      port,
      httpPort,
      template: spec.config,
      opts: this.opts,
    });
    try {
      await waitForTcp(started.getHost(), started.getMappedPort(port), timeoutMs);
    } catch (err) {
      await broker.dispose().catch(() => undefined);
      throw err;
    }
    trackBroker(broker);
    return broker;
  }
}
