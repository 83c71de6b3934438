import type { Readable } from "node:stream";
import { freePort } from "@cotal/core/server-process";
import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from "testcontainers";
import {
  DEFAULT_START_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  SERVER_READY,
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
import { BrokerBase, waitForTcp } from "./broker-base.js";
import { monotonicMs } from "./clock.js";
import { HarnessError } from "./errors.js";
import { tail } from "./logs.js";
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

export class ContainerBroker extends BrokerBase<ContainerRun> implements Broker {
  readonly backend = "container" as const;
  readonly url: string;
  readonly configPath = CONFIG_PATH;
  readonly pid = undefined;
  readonly containerId: string;

  private readonly started: StartedTestContainer;
  private readonly docker: DockerContainer;
  private readonly log: ContainerLog;
  private readonly opts: ContainerBackendOptions;

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
    super({ id: init.id, port: init.port, httpPort: init.httpPort, template: init.template });
    this.started = init.started;
    this.docker = init.docker;
    this.log = init.log;
    this.opts = init.opts;
    this.containerId = init.started.getId();
    this.url = `nats://${init.started.getHost()}:${init.started.getMappedPort(init.port)}`;
    this.current = this.watchExit();
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

  async logOffset(): Promise<number> {
    return this.log.byteLength();
  }

  async logsSince(offset: number): Promise<string> {
    return this.log.since(offset);
  }

  protected describe(): string {
    return `nats-server container ${this.id}`;
  }

  /** Dead only once the server stopped and docker delivered its last lines. */
  protected override logStillArriving(): boolean {
    return this.log.streaming;
  }

  /** The docker kill API, not `exec kill`: PID 1 cannot be SIGKILLed from inside its namespace. */
  protected async deliver(sig: BrokerSignal): Promise<void> {
    await this.docker.kill({ signal: sig });
  }

  /**
   * The copy completes before SIGHUP, so the server never reads a partial file. Docker delivers
   * logs with a lag, so bytes read after the reload's offset could in principle be older than the
   * SIGHUP; reloads are serialized (the base), so none of them is an earlier verdict.
   */
  protected async installConfig(template: string): Promise<void> {
    await this.started.copyContentToContainer([{ content: this.render(template), target: CONFIG_PATH, mode: 0o644 }]);
    this.template = template;
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

  protected async startAgain(): Promise<void> {
    const before = monotonicMs();
    // docker restart of a stopped container starts it with the same writable layer (the store),
    // the same fixed port binding, and testcontainers re-runs the log wait strategy.
    await this.started.restart();
    const client = await getContainerRuntimeClient();
    const inspect = await client.container.inspect(this.docker);
    const since = new Date(inspect.State.StartedAt).getTime() / 1000;
    this.log.attach(await this.started.logs({ since }));
    this.current = this.watchExit();
    await waitForTcp(this.started.getHost(), this.started.getMappedPort(this.port), { timeoutMs: tcpWindow((this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS) - (monotonicMs() - before)), pollMs: 50 });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    untrackBroker(this);
    await this.started.stop({ remove: true, removeVolumes: true, timeout: this.opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS });
  }
}

/** Docker's port proxy may lag the ready line: at least a second for the mapped port to answer. */
function tcpWindow(ms: number): number {
  return Math.max(ms, 1_000);
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
      await waitForTcp(started.getHost(), started.getMappedPort(port), { timeoutMs: tcpWindow(timeoutMs), pollMs: 50 });
    } catch (err) {
      await broker.dispose().catch(() => undefined);
      throw err;
    }
    trackBroker(broker);
    return broker;
  }
}
