import { Counter, Gauge, type Registry } from "prom-client";
import type { SpaceUsageRow, StatusReport } from "@cotal/core";
import type { SpaceQuota } from "@cotal/core/light";
import { JOB_TYPES, type JobType } from "./names.js";
import { SnapshotCache } from "./snapshot-cache.js";
import { JOB_STATES } from "./status.js";

type SpaceState = SpaceUsageRow["state"];
type SpaceUsage = NonNullable<SpaceUsageRow["usage"]>;

/**
 * The root's side of cotal's metrics (docs/metrics.md): what `cotal status`, `space list`,
 * `space info` and `jobs status` read, as Prometheus series. Served by the worker (beside its own
 * counters, metrics.ts) and by `cotal metrics`. Every value comes from one bounded, cached
 * snapshot (snapshot-cache.ts), so a scrape never waits on more than one read.
 */
export interface RootSnapshot {
  rootState: StatusReport["state"];
  spaces: readonly SpaceUsageRow[];
  /** Spaces whose usage read failed (their usage series are absent). */
  usageUnread: number;
  /** Job counts per queue and state; null: no Redis configured, or it did not answer. */
  queues: ReadonlyMap<JobType, Readonly<Record<(typeof JOB_STATES)[number], number>>> | null;
  /** Each space's last successful scheduled backup, Unix ms; null: no Redis configured, or it did not answer. */
  backups: ReadonlyMap<string, number> | null;
  /** Why Redis was not read (null: read, or none configured); the queue and backup series are absent then. */
  redisError: string | null;
}

export interface RootExporterOptions {
  registry: Registry;
  read: () => Promise<RootSnapshot>;
  /** A snapshot this young is served without a new read (default 10 s). */
  maxAgeMs?: number;
  /** How long a scrape waits for a read in flight (default 5 s), then serves the last snapshot. */
  waitMs?: number;
  /** false: leave `cotal_backup_last_success_timestamp_seconds` to the worker's own series (metrics.ts). */
  backupSeries?: boolean;
  now?: () => number;
}

/** Every state `cotal status` derives, so `cotal_root_state{state="clean"} == 0` is a query, not an absence. */
const ROOT_STATES: Record<StatusReport["state"], true> = {
  absent: true, uncertain: true, stopped: true, clean: true, PENDING: true, "PROMOTED-BUT-UNCOMMITTED": true, "PROVEN-BUT-UNCOMMITTED": true,
  "UNPROVEN RELOAD": true, "SILENT EVICTION": true, "RESURRECTION RISK": true, UNRESUMABLE: true, BLOCKED: true, UNREACHABLE: true, DEGRADED: true, divergence: true,
};
const SPACE_STATES: Record<SpaceState, true> = {
  active: true, removing: true, quiesced: true, excluded: true, "pending-add": true, "pending-remove": true, "disk-only": true, "kv-only": true, "not-in-config": true, unknown: true,
};

/** Usage against quota: [series stem, help, the usage field, the quota field]. */
const USAGE_SERIES = [
  ["cotal_tenant_storage_bytes", "JetStream file storage the space uses (bytes)", "disk", "disk"],
  ["cotal_tenant_memory_bytes", "JetStream memory storage the space uses (bytes)", "mem", "mem"],
  ["cotal_tenant_streams", "Streams the space has", "streams", "streams"],
  ["cotal_tenant_consumers", "Consumers the space has", "consumers", "consumers"],
  ["cotal_tenant_connections", "Client connections of the space, every node summed", "conns", "conns"],
] as const satisfies readonly (readonly [string, string, keyof SpaceUsage, keyof SpaceQuota])[];

/** Registers the root's series on `registry`; each collect takes the one cached snapshot. */
export function exportRoot(opts: RootExporterOptions): { cache: SnapshotCache<RootSnapshot> } {
  const registers = [opts.registry];
  const now = opts.now ?? Date.now;
  const failures = new Counter({
    name: "cotal_exporter_read_failures_total",
    help: "Snapshot reads that failed: source=root (status, usage; the last snapshot is served meanwhile) or redis (queue and backup series absent).",
    labelNames: ["source"],
    registers,
    // Rendered after this scrape's read, as the gauges are (prom-client collects every metric at once).
    async collect() {
      await cache.get();
    },
  });
  const cache = new SnapshotCache<RootSnapshot>({
    read: async () => {
      const s = await opts.read();
      if (s.redisError !== null) failures.inc({ source: "redis" });
      return s;
    },
    now,
    onError: () => failures.inc({ source: "root" }),
    ...(opts.maxAgeMs !== undefined ? { maxAgeMs: opts.maxAgeMs } : {}),
    ...(opts.waitMs !== undefined ? { waitMs: opts.waitMs } : {}),
  });
  /** A gauge set from the snapshot at each scrape: reset first, so a gone space's series goes. */
  const gauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, s: RootSnapshot) => void): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const snap = await cache.get();
        this.reset();
        if (snap) fill(this, snap.value);
      },
    });
  };
  gauge("cotal_root_state", "1 for the state `cotal status` derives for the root now, 0 for every other.", ["state"], (g, s) => {
    for (const state of Object.keys(ROOT_STATES)) g.set({ state }, state === s.rootState ? 1 : 0);
  });
  gauge("cotal_tenants", "Tenants (spaces) by state, as `cotal space list` shows them.", ["state"], (g, s) => {
    const counts = new Map<string, number>(Object.keys(SPACE_STATES).map((k) => [k, 0]));
    for (const x of s.spaces) counts.set(x.state, (counts.get(x.state) ?? 0) + 1);
    for (const [state, n] of counts) g.set({ state }, n);
  });
  usageSeries(gauge);
  gauge("cotal_tenant_usage_unread", "Spaces whose usage the last snapshot could not read (their usage series are absent).", [], (g, s) => g.set(s.usageUnread));
  gauge("cotal_queue_jobs", "BullMQ jobs of this root by queue type and state (absent without Redis).", ["type", "state"], (g, s) => {
    for (const type of JOB_TYPES) for (const state of JOB_STATES) if (s.queues) g.set({ type, state }, s.queues.get(type)?.[state] ?? 0);
  });
  if (opts.backupSeries !== false) {
    gauge("cotal_backup_last_success_timestamp_seconds", "Unix time of the last successful scheduled backup of each space (the run records in Redis).", ["space"], (g, s) => {
      for (const [space, ms] of s.backups ?? []) g.set({ space }, ms / 1000);
    });
  }
  new Gauge({
    name: "cotal_exporter_snapshot_age_seconds",
    help: "How old the snapshot this scrape served is (reads are cached and bounded; docs/metrics.md).",
    registers,
    async collect() {
      const snap = await cache.get();
      this.set(snap ? (now() - snap.at) / 1000 : -1);
    },
  });
  return { cache };
}

type GaugeFactory = (name: string, help: string, labelNames: string[], fill: (g: Gauge, s: RootSnapshot) => void) => void;

/** Each usage field beside its quota: `<stem>` and `<stem>_limit` by space; an unlimited (-1) quota has no `_limit` series. */
function usageSeries(gauge: GaugeFactory): void {
  for (const [name, help, used, limit] of USAGE_SERIES) {
    gauge(name, `${help}, as the server counts it against the quota.`, ["space"], (g, s) => {
      for (const x of s.spaces) if (x.usage) g.set({ space: x.space }, x.usage[used]);
    });
    gauge(`${name}_limit`, `${help}: the quota (absent when unlimited).`, ["space"], (g, s) => {
      for (const x of s.spaces) if (x.quota && x.quota[limit] >= 0) g.set({ space: x.space }, x.quota[limit]);
    });
  }
}
