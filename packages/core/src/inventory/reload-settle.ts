import type { NatsConnection } from "@nats-io/transport-node";
import { serverFeatures } from "../broker/server-features.js";
import { sleep } from "./kv-errors.js";

/**
 * When the authority store's connection last dropped and came back (its status stream), so a writer
 * can wait out the drop a reload causes before its next CAS (docs/saga.md, "The authority store").
 */
export class ConnectionWatch {
  readonly #nc: NatsConnection;
  /** performance.now() of the connection's last disconnect / reconnect. */
  #lastDisconnectAt = -1;
  #lastReconnectAt = -1;

  constructor(nc: NatsConnection) {
    this.#nc = nc;
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === "disconnect") this.#lastDisconnectAt = performance.now();
        else if (st.type === "reconnect") this.#lastReconnectAt = performance.now();
      }
    })().catch(() => undefined);
  }

  /**
   * After a proven reload, wait for this connection's own drop-and-reconnect (nats-server 2.9.10
   * drops every JWT client on reload) before writing: a CAS sent into the dying socket loses its
   * reply and costs a full request timeout. A server that keeps them (reloadKeepsJwtClients, 2.14.8+)
   * sends no drop to wait for, so its grace is 0 (BENCHMARKS.md: 150 ms twice per online backup); older ones cost `graceMs`.
   */
  async settleAfterReload(signalledAt: number, opts: { graceMs?: number; maxWaitMs?: number } = {}): Promise<void> {
    let keeps = false;
    try {
      keeps = serverFeatures(this.#nc.info?.version ?? "0.0.0").reloadKeepsJwtClients;
    } catch {
      // an unreadable version is treated as an old server: the grace stays
    }
    const graceUntil = performance.now() + (opts.graceMs ?? (keeps ? 0 : 150));
    const deadline = performance.now() + (opts.maxWaitMs ?? 3_000);
    for (;;) {
      if (this.#lastReconnectAt > signalledAt && this.#lastReconnectAt >= this.#lastDisconnectAt) return;
      const dropped = this.#lastDisconnectAt > signalledAt;
      if (!dropped && performance.now() > graceUntil) return;
      if (performance.now() > deadline) return; // the write path settles a lost reply by reading back
      await sleep(5);
    }
  }
}
