import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { SpaceAddOptions } from "@cotal/core";
import { exportRoot, type RootExporterOptions, type RootSnapshot } from "./root-exporter.js";
import type { SnapshotCache } from "./snapshot-cache.js";
import { rootReads, type RootReadsOptions } from "./root-reads.js";

/**
 * What a cotal worker exports on /metrics, through prom-client: the process metrics prom-client
 * collects (CPU, memory, event loop, GC) plus cotal's own. One registry per worker, so two workers
 * in one process (tests) never share series. The worker's own series are what it saw; the root's
 * (exportRoot) come from one cached, bounded snapshot of the root, the broker and Redis (docs/metrics.md).
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly registers = [this.registry];
  /**
   * The series labelled by root (docs/metrics.md, "The root label"): the root exporter's and the
   * saga counters, rendered after the worker's own (which get the same label once the root is known).
   */
  readonly rootRegistry = new Registry();
  private readonly rootRegisters = [this.rootRegistry];

  readonly processed = new Counter({ name: "cotal_jobs_processed_total", help: "Jobs completed, by job type and outcome.", labelNames: ["type", "outcome"] as const, registers: this.registers });
  readonly failed = new Counter({ name: "cotal_jobs_failed_total", help: "Job attempts that failed, by job type and whether a retry follows.", labelNames: ["type", "final"] as const, registers: this.registers });
  readonly active = new Gauge({ name: "cotal_jobs_active", help: "Jobs this worker holds right now, by job type.", labelNames: ["type"] as const, registers: this.registers });
  readonly batchSize = new Histogram({ name: "cotal_batch_size", help: "Space-add jobs coalesced into one saga call (group commit).", buckets: [1, 2, 5, 10, 25, 50, 100, 200, 500, 1000], registers: this.registers });
  readonly batchSeconds = new Histogram({ name: "cotal_batch_seconds", help: "Wall time of one group-committed saga call.", buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120], registers: this.registers });
  readonly stepSeconds = new Histogram({ name: "cotal_saga_step_seconds", help: "Mutation saga step durations (SagaTiming steps, docs/saga.md).", labelNames: ["step"] as const, buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10], registers: this.registers });
  readonly generation = new Gauge({ name: "cotal_inventory_generation", help: "Inventory generation after the last saga call of this worker.", registers: this.registers });
  readonly appliedGeneration = new Gauge({ name: "cotal_inventory_applied_generation", help: "Generation the broker was last proven to run, from this worker's last committed saga call.", registers: this.registers });
  readonly reloads = new Counter({ name: "cotal_reloads_total", help: "Broker reloads this worker's saga calls performed.", registers: this.registers });
  readonly sagaAttempts = new Counter({ name: "cotal_saga_attempts_total", help: "Mutation saga attempts this worker ran, by op and outcome (ok, conflict: re-read and re-decided, error).", labelNames: ["op", "outcome"] as const, registers: this.rootRegisters });
  readonly sagaConflicts = new Counter({ name: "cotal_saga_conflicts_total", help: "Saga attempts that lost their compare-and-set to another writer (docs/saga.md), by op.", labelNames: ["op"] as const, registers: this.rootRegisters });
  readonly provisionRetries = new Counter({ name: "cotal_provision_retries_total", help: "Provisionings retried after a dropped connection (a reload mid-request; docs/lifecycle.md).", registers: this.rootRegisters });

  /** The hooks a verb takes (SessionHooks): the saga's attempts and the provisioning retries, counted here; the core reads no env for them. */
  readonly sagaHooks: Pick<SpaceAddOptions, "onAttempt" | "onProvisionRetry"> = {
    onAttempt: ({ op, outcome }) => {
      this.sagaAttempts.inc({ op, outcome });
      if (outcome === "conflict") this.sagaConflicts.inc({ op });
    },
    onProvisionRetry: () => this.provisionRetries.inc(),
  };
  /** One series per scheduled tenant that ever backed up: alert on `time() - it` (docs/metrics.md). */
  readonly backupLastSuccess = new Gauge({
    name: "cotal_backup_last_success_timestamp_seconds",
    help: "Unix time of the last successful scheduled backup of each space (from the run records in Redis, so a restarted worker keeps it).",
    labelNames: ["root", "space"] as const,
    registers: this.registers,
  });

  /**
   * @param quiesced how many tenants stand quiesced on the root (journal + JWTs: files, not Redis),
   *   read at scrape time at most every `quiescedEveryMs`, since it reads every account record.
   */
  constructor(quiesced?: () => number, quiescedEveryMs = 30_000) {
    collectDefaultMetrics({ register: this.registry });
    if (quiesced) {
      let cached: { at: number; n: number } | undefined;
      new Gauge({
        name: "cotal_quiesced_tenants",
        help: "Tenants an online backup holds quiesced on this root (as cotal status lists them).",
        registers: this.registers,
        collect() {
          if (!cached || Date.now() - cached.at >= quiescedEveryMs) cached = { at: Date.now(), n: quiesced() };
          this.set(cached.n);
        },
      });
    }
  }

  /**
   * The root's series (root-exporter.ts: tenants by state, usage against quota, queue depth, root
   * state), each with the `root` label, as the saga counters get it.
   */
  exportRoot(root: string, opts: Omit<RootExporterOptions, "registry" | "backupSeries">): SnapshotCache<RootSnapshot> {
    // Every series the worker serves names its root, its own and the process's too (docs/metrics.md "The root label").
    this.registry.setDefaultLabels({ root });
    this.rootRegistry.setDefaultLabels({ root });
    // This worker keeps its own backup series (kept across a Redis blip, moved by its own runs).
    return exportRoot({ ...opts, registry: this.rootRegistry, backupSeries: false }).cache;
  }

  /** {@link exportRoot} over the root's own reads (root-reads.ts); `close` ends their Redis connections. */
  watchRoot(opts: RootReadsOptions): { close(): Promise<void> } {
    const reads = rootReads(opts);
    this.exportRoot(opts.root, { read: () => reads.read() });
    return reads;
  }

  /** After a saga call: a commit means the proof CAS ran, so appliedGeneration reached generation. */
  sagaResult(r: { outcome: string; generation: number; reloads: number }): void {
    this.generation.set(r.generation);
    if (r.outcome === "committed") this.appliedGeneration.set(r.generation);
    this.reloads.inc(r.reloads);
  }

  /** A backup of `space` succeeded at `atMs`; an older time never moves the series back. */
  backupSucceeded(root: string, space: string, atMs: number): void {
    const seconds = atMs / 1000;
    const cur = this.lastSuccess.get(space);
    if (cur !== undefined && cur >= seconds) return;
    this.lastSuccess.set(space, seconds);
    this.backupLastSuccess.set({ root, space }, seconds);
  }

  /**
   * The root's run records as read from Redis (at start and every sync): a series per recorded
   * space, none for a space whose records went (`jobs unschedule`, `space rm`). A success this worker
   * recorded after `readAtMs` (while the read was in flight) is newer than the read and stays.
   */
  syncBackupSuccesses(root: string, atMs: ReadonlyMap<string, number>, readAtMs: number): void {
    const fresh = [...this.lastSuccess].filter(([, s]) => s * 1000 >= readAtMs);
    this.lastSuccess.clear();
    this.backupLastSuccess.reset();
    for (const [space, at] of atMs) this.backupSucceeded(root, space, at);
    for (const [space, s] of fresh) this.backupSucceeded(root, space, s * 1000);
  }

  private readonly lastSuccess = new Map<string, number>();

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Both registries in one exposition (distinct family names; the text format allows the join). */
  async render(): Promise<string> {
    const [own, root] = await Promise.all([this.registry.metrics(), this.rootRegistry.metrics()]);
    return root ? `${own.endsWith("\n") ? own : `${own}\n`}${root}` : own;
  }
}
