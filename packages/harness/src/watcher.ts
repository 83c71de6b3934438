import { connect, credsAuthenticator, type NatsConnection, type NodeConnectionOptions, type Status } from "@nats-io/transport-node";
import { monotonicMs } from "./clock.js";
import { HarnessError } from "./errors.js";

export type WatchEventType = Exclude<Status["type"], "ping">;

export interface WatchEvent {
  type: WatchEventType;
  /** monotonicMs() when the client reported it. */
  at: number;
  server?: string;
  error?: string;
}

export interface SurvivorWatcherOptions {
  url: string | string[];
  /** Creds file text; omit for a server without auth. */
  creds?: string;
  /** Pause between reconnect attempts. Default 20 ms, so a gap measures the outage, not the backoff. */
  reconnectTimeWaitMs?: number;
  /** Handshake timeout. Default 2 s. */
  connectTimeoutMs?: number;
  /** Anything else for connect(); applied last. */
  connectOptions?: Partial<NodeConnectionOptions>;
}

/**
 * Longest time from a disconnect to the following reconnect. An outage still open at `endAt`
 * (default: now) counts up to `endAt`. 0 when the connection never dropped.
 */
export function maxReconnectGapMs(events: readonly WatchEvent[], endAt = monotonicMs()): number {
  let max = 0;
  let downSince: number | undefined;
  for (const e of events) {
    if (e.type === "disconnect" && downSince === undefined) downSince = e.at;
    else if (e.type === "reconnect" && downSince !== undefined) {
      max = Math.max(max, e.at - downSince);
      downSince = undefined;
    }
  }
  if (downSince !== undefined) max = Math.max(max, endAt - downSince);
  return max;
}

/**
 * One long-lived connection that reconnects fast and records every disconnect/reconnect. Used to
 * prove an existing client survives (or does not survive) a reload, restart or revocation.
 */
export class SurvivorWatcher {
  private readonly recorded: WatchEvent[] = [];
  private loop: Promise<void> | undefined;
  private stoppedAt: number | undefined;

  private constructor(readonly connection: NatsConnection) {}

  static async start(opts: SurvivorWatcherOptions): Promise<SurvivorWatcher> {
    const nc = await connect({
      servers: opts.url,
      ...(opts.creds === undefined ? {} : { authenticator: credsAuthenticator(new TextEncoder().encode(opts.creds)) }),
      name: "cotal-survivor",
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: opts.reconnectTimeWaitMs ?? 20,
      reconnectJitter: 0,
      timeout: opts.connectTimeoutMs ?? 2_000,
      // Keep trying through auth errors too: the point is to observe, not to give up.
      ignoreAuthErrorAbort: true,
      ...opts.connectOptions,
    });
    const w = new SurvivorWatcher(nc);
    w.loop = w.follow();
    return w;
  }

  private async follow(): Promise<void> {
    for await (const s of this.connection.status()) {
      if (s.type === "ping") continue;
      const e: WatchEvent = { type: s.type, at: monotonicMs() };
      if ("server" in s) e.server = s.server;
      if (s.type === "error") e.error = s.error.message;
      this.recorded.push(e);
    }
  }

  /** Events so far (live array). */
  get events(): readonly WatchEvent[] {
    return this.recorded;
  }

  count(type: WatchEventType): number {
    return this.recorded.reduce((n, e) => (e.type === type ? n + 1 : n), 0);
  }

  /** See the function of the same name; open outages count up to stop() (or now). */
  maxReconnectGapMs(): number {
    return maxReconnectGapMs(this.recorded, this.stoppedAt ?? monotonicMs());
  }

  /** Resolves with the first event of `type` at or after `since` (default: any time). */
  async waitFor(type: WatchEventType, opts: { since?: number; timeoutMs?: number } = {}): Promise<WatchEvent> {
    const since = opts.since ?? Number.NEGATIVE_INFINITY;
    const deadline = monotonicMs() + (opts.timeoutMs ?? 10_000);
    for (;;) {
      const hit = this.recorded.find((e) => e.type === type && e.at >= since);
      if (hit) return hit;
      if (monotonicMs() > deadline) throw new HarnessError("timeout", `no "${type}" event within ${opts.timeoutMs ?? 10_000} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Closes the connection and returns every event recorded. */
  async stop(): Promise<WatchEvent[]> {
    if (this.stoppedAt === undefined) {
      this.stoppedAt = monotonicMs();
      if (!this.connection.isClosed()) await this.connection.close();
      await this.loop;
    }
    return [...this.recorded];
  }
}
