/** "JetStream system temporarily unavailable" (10008, a group electing after a heal) is retried by reads; any other answer is final. */
import { JetStreamApiError } from "@nats-io/jetstream";
import type { KV, KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { CasKv } from "../src/inventory/kv-cas.js";
import { isTransientApi } from "../src/inventory/kv-errors.js";
import { GUARDS_ON } from "../src/guards.js";
import { isCotalError } from "../src/errors.js";

const unavailable = () => new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" });
const denied = () => new JetStreamApiError({ code: 500, err_code: 10077, description: "stream store failed" });
const nc = { isClosed: () => false, rtt: async () => 1 } as unknown as NatsConnection;

function kvFailing(failures: (() => Error)[]): KV & { calls: number } {
  const kv = {
    calls: 0,
    get: async () => {
      const f = failures[kv.calls++];
      if (f) throw f();
      return { key: "k", value: new Uint8Array([1]), operation: "PUT", revision: 3 } as unknown as KvEntry;
    },
  };
  return kv as unknown as KV & { calls: number };
}

describe("a read of the authority store while JetStream says not yet", () => {
  it("retries 10008 until it answers, and takes any other API answer as final", async () => {
    expect(isTransientApi(unavailable())).toBe(true);
    expect(isTransientApi(denied())).toBe(false);
    const cas = new CasKv(nc, { reconnectWaitMs: 5_000, guards: GUARDS_ON, maxPayload: () => undefined });
    const kv = kvFailing([unavailable, unavailable]);
    expect((await cas.readEntry(kv, "k", "read k"))?.revision).toBe(3);
    expect(kv.calls).toBe(3);
    const final = kvFailing([denied]);
    const err = await cas.readEntry(final, "k", "read k").catch((e: unknown) => e);
    expect(isCotalError(err, "inventory-unreachable")).toBe(true);
    expect(final.calls).toBe(1);
  });

  it("gives up as busy when it stays unavailable past the wait", async () => {
    const cas = new CasKv(nc, { reconnectWaitMs: 200, guards: GUARDS_ON, maxPayload: () => undefined });
    const err = await cas.readEntry(kvFailing(Array.from({ length: 100 }, () => unavailable)), "k", "read k").catch((e: unknown) => e);
    expect(isCotalError(err, "inventory-busy")).toBe(true);
    // It names the cause (no leader through this node) and sends the operator to status first.
    expect((err as Error).message).toMatch(/no leader for it through this node/);
    expect((err as { next?: string }).next).toMatch(/^cotal status && /);
    expect((err as { details?: unknown }).details).toEqual({ errCode: 10008 });
  });

  it("a deadline with no answer at all stays the plain busy refusal", async () => {
    const silent = { isClosed: () => false, rtt: () => new Promise(() => {}) } as unknown as NatsConnection;
    const cas = new CasKv(silent, { reconnectWaitMs: 100, guards: GUARDS_ON, maxPayload: () => undefined });
    const err = await cas.readEntry(kvFailing([]), "k", "read k").catch((e: unknown) => e);
    expect(isCotalError(err, "inventory-busy")).toBe(true);
    expect((err as Error).message).not.toMatch(/no leader/);
  });
});
