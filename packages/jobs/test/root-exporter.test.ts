import { describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { parsePromText, promValue } from "@cotal/harness";
import type { SpaceUsageRow } from "@cotal/core";
import type { SpaceQuota } from "@cotal/core/light";
import { exportRoot, SnapshotCache, WorkerMetrics, type RootSnapshot } from "../src/index.js";

const QUOTA: SpaceQuota = { disk: 1_000_000, mem: -1, streams: 10, consumers: 100, conns: 50, subs: -1, payload: 1_048_576, leafnodes: 0 };
const USAGE = { disk: 0, mem: 0, streams: 3, consumers: 0, conns: 0, subs: 0 };

function row(space: string, state: SpaceUsageRow["state"], usage: Partial<typeof USAGE> | null = {}): SpaceUsageRow {
  return { space, state, quota: QUOTA, usage: usage && { ...USAGE, ...usage } };
}

function snapshot(over: Partial<RootSnapshot> = {}): RootSnapshot {
  return { rootState: "clean", spaces: [row("alpha", "active")], usageUnread: 0, queues: null, backups: null, redisError: null, ...over };
}

/** A registry with the root exporter over a snapshot the test changes; every scrape reads again (maxAgeMs 0). */
function exporter(initial: RootSnapshot) {
  const registry = new Registry();
  registry.setDefaultLabels({ root: "/srv/r" });
  let current = initial;
  let reads = 0;
  exportRoot({ registry, maxAgeMs: 0, read: async () => (reads++, current) });
  return {
    set: (s: RootSnapshot) => void (current = s),
    reads: () => reads,
    scrape: async () => parsePromText(await registry.metrics()),
  };
}

const R = { root: "/srv/r" };

describe("the root exporter: each series moves when what it counts moves", () => {
  it("tenants by state: every state is a series (0 too), and a new space moves its state's count", async () => {
    const e = exporter(snapshot());
    const before = await e.scrape();
    expect(promValue(before, "cotal_tenants", { ...R, state: "active" })).toBe(1);
    expect(promValue(before, "cotal_tenants", { ...R, state: "quiesced" })).toBe(0);
    e.set(snapshot({ spaces: [row("alpha", "active"), row("beta", "active"), row("gamma", "quiesced")] }));
    const after = await e.scrape();
    expect(promValue(after, "cotal_tenants", { ...R, state: "active" })).toBe(2);
    expect(promValue(after, "cotal_tenants", { ...R, state: "quiesced" })).toBe(1);
  });

  it("root state: 1 for the derived state, 0 for every other, so `state=\"clean\"} == 0` alerts", async () => {
    const e = exporter(snapshot());
    expect(promValue(await e.scrape(), "cotal_root_state", { ...R, state: "clean" })).toBe(1);
    e.set(snapshot({ rootState: "BLOCKED" }));
    const after = await e.scrape();
    expect(promValue(after, "cotal_root_state", { ...R, state: "clean" })).toBe(0);
    expect(promValue(after, "cotal_root_state", { ...R, state: "BLOCKED" })).toBe(1);
  });

  it("usage against quota: storage, streams, consumers, connections move with the server's counts; an unlimited quota has no _limit", async () => {
    const e = exporter(snapshot());
    const a = { ...R, space: "alpha" };
    const before = await e.scrape();
    expect(promValue(before, "cotal_tenant_storage_bytes", a)).toBe(0);
    expect(promValue(before, "cotal_tenant_storage_bytes_limit", a)).toBe(1_000_000);
    expect(promValue(before, "cotal_tenant_streams_limit", a)).toBe(10);
    expect(promValue(before, "cotal_tenant_memory_bytes_limit", a), "mem -1: unlimited").toBeUndefined();
    e.set(snapshot({ spaces: [row("alpha", "active", { disk: 4096, streams: 4, consumers: 2, conns: 7 })] }));
    const after = await e.scrape();
    expect(promValue(after, "cotal_tenant_storage_bytes", a)).toBe(4096);
    expect(promValue(after, "cotal_tenant_streams", a)).toBe(4);
    expect(promValue(after, "cotal_tenant_consumers", a)).toBe(2);
    expect(promValue(after, "cotal_tenant_connections", a)).toBe(7);
    expect(promValue(after, "cotal_tenant_connections_limit", a)).toBe(50);
  });

  it("a removed space's series go; a space whose usage was not read has its quota but no usage, and is counted unread", async () => {
    const e = exporter(snapshot({ spaces: [row("alpha", "active"), row("beta", "active")] }));
    expect(promValue(await e.scrape(), "cotal_tenant_streams", { ...R, space: "beta" })).toBe(3);
    e.set(snapshot({ spaces: [row("alpha", "active", null)], usageUnread: 1 }));
    const after = await e.scrape();
    expect(promValue(after, "cotal_tenant_streams", { ...R, space: "beta" })).toBeUndefined();
    expect(promValue(after, "cotal_tenant_streams", { ...R, space: "alpha" })).toBeUndefined();
    expect(promValue(after, "cotal_tenant_streams_limit", { ...R, space: "alpha" })).toBe(10);
    expect(promValue(after, "cotal_tenant_usage_unread", R)).toBe(1);
  });

  it("queue depth per type and state, and each space's last successful backup; absent without Redis, and a Redis failure is counted", async () => {
    const counts = { waiting: 0, active: 0, delayed: 0, prioritized: 0, "waiting-children": 0, completed: 0, failed: 0 };
    const e = exporter(snapshot());
    const none = await e.scrape();
    expect(promValue(none, "cotal_queue_jobs", { ...R, type: "space-add", state: "failed" })).toBeUndefined();
    e.set(snapshot({ queues: new Map([["space-add", { ...counts, waiting: 4, failed: 1 }]]), backups: new Map([["alpha", 1_700_000_000_000]]) }));
    const after = await e.scrape();
    expect(promValue(after, "cotal_queue_jobs", { ...R, type: "space-add", state: "waiting" })).toBe(4);
    expect(promValue(after, "cotal_queue_jobs", { ...R, type: "space-add", state: "failed" })).toBe(1);
    expect(promValue(after, "cotal_queue_jobs", { ...R, type: "space-rm", state: "waiting" })).toBe(0);
    expect(promValue(after, "cotal_backup_last_success_timestamp_seconds", { ...R, space: "alpha" })).toBe(1_700_000_000);
    e.set(snapshot({ redisError: "ECONNREFUSED" }));
    const down = await e.scrape();
    expect(promValue(down, "cotal_queue_jobs", { ...R, type: "space-add", state: "waiting" })).toBeUndefined();
    expect(promValue(down, "cotal_exporter_read_failures_total", { ...R, source: "redis" })).toBe(1);
  });

  it("one snapshot per scrape: the many series of a scrape share one read", async () => {
    const e = exporter(snapshot());
    await e.scrape();
    expect(e.reads()).toBe(1);
  });
});

describe("scrape-time reads are bounded (SnapshotCache)", () => {
  it("a young snapshot is served without a read", async () => {
    let t = 0;
    let reads = 0;
    const c = new SnapshotCache({ read: async () => ++reads, maxAgeMs: 1_000, now: () => t });
    expect((await c.get())?.value).toBe(1);
    t = 999;
    expect((await c.get())?.value).toBe(1);
    t = 1_000;
    expect((await c.get())?.value).toBe(2);
  });

  it("a slow read never piles up: scrapes past the wait get the last snapshot, and no second read starts while one runs", async () => {
    let t = 0;
    let reads = 0;
    let release: (() => void) | undefined;
    const c = new SnapshotCache({
      read: () => (++reads === 1 ? Promise.resolve("fresh") : new Promise<string>((r) => (release = () => r("late")))),
      maxAgeMs: 10,
      waitMs: 20,
      now: () => t,
    });
    expect((await c.get())?.value).toBe("fresh");
    t = 100; // stale: the next scrape starts a read that hangs
    const scrapes = await Promise.all([c.get(), c.get(), c.get()]);
    expect(scrapes.map((s) => s?.value)).toEqual(["fresh", "fresh", "fresh"]);
    expect(reads, "three scrapes of a stale snapshot, one read").toBe(2);
    expect(c.reading).toBe(true);
    await c.get();
    expect(reads, "still the one read in flight").toBe(2);
    release?.();
    await new Promise((r) => setTimeout(r, 0));
    expect(c.reading).toBe(false);
    expect((await c.get())?.value).toBe("late");
  });

  it("a read that never answers is given up after readTimeoutMs, so a later scrape reads again", async () => {
    let reads = 0;
    const errors: unknown[] = [];
    const c = new SnapshotCache({ read: () => (++reads === 1 ? new Promise<number>(() => undefined) : Promise.resolve(reads)), maxAgeMs: 0, waitMs: 10, readTimeoutMs: 30, onError: (e) => errors.push(e) });
    expect(await c.get(), "nothing read yet").toBeUndefined();
    await new Promise((r) => setTimeout(r, 60));
    expect(errors).toHaveLength(1);
    expect(c.reading).toBe(false);
    expect((await c.get())?.value).toBe(2);
  });

  it("a failed read keeps the last snapshot and is counted", async () => {
    const registry = new Registry();
    let fail = false;
    exportRoot({ registry, maxAgeMs: 0, read: async () => (fail ? Promise.reject(new Error("broker gone")) : snapshot()) });
    expect(promValue(parsePromText(await registry.metrics()), "cotal_tenants", { state: "active" })).toBe(1);
    fail = true;
    const fams = parsePromText(await registry.metrics());
    expect(promValue(fams, "cotal_tenants", { state: "active" }), "the last snapshot").toBe(1);
    expect(promValue(fams, "cotal_exporter_read_failures_total", { source: "root" })).toBeGreaterThanOrEqual(1);
  });
});

describe("the worker's saga counters and its root series", () => {
  it("attempts, conflicts and provisioning retries move through the hooks a verb takes, labelled by root", async () => {
    const m = new WorkerMetrics();
    m.exportRoot("/srv/r", { read: async () => snapshot(), maxAgeMs: 0 });
    const scrape = async () => parsePromText(await m.render());
    expect(promValue(await scrape(), "cotal_saga_attempts_total", { ...R, op: "batch", outcome: "ok" })).toBeUndefined();
    m.sagaHooks.onAttempt?.({ op: "batch", outcome: "conflict" });
    m.sagaHooks.onAttempt?.({ op: "batch", outcome: "ok" });
    m.sagaHooks.onProvisionRetry?.("alpha");
    const after = await scrape();
    expect(promValue(after, "cotal_saga_attempts_total", { ...R, op: "batch", outcome: "conflict" })).toBe(1);
    expect(promValue(after, "cotal_saga_attempts_total", { ...R, op: "batch", outcome: "ok" })).toBe(1);
    expect(promValue(after, "cotal_saga_conflicts_total", { ...R, op: "batch" })).toBe(1);
    expect(promValue(after, "cotal_provision_retries_total", R)).toBe(1);
    expect(promValue(after, "cotal_tenants", { ...R, state: "active" }), "the root series beside the worker's own").toBe(1);
    expect(promValue(after, "cotal_reloads_total", R), "the worker's own series carry the root label too").toBe(0);
    expect(promValue(after, "cotal_reloads_total"), "no unlabelled copy").toBeUndefined();
  });
});
