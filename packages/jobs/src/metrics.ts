/** A minimal Prometheus text-format registry: counters, gauges, histograms with labels. */
type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

interface Series {
  labels: Labels;
  value: number;
}

class Metric {
  readonly series = new Map<string, Series>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly kind: "counter" | "gauge",
  ) {}
  private at(labels: Labels): Series {
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, value: 0 }));
    return s;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.at(labels).value += by;
  }
  set(value: number, labels: Labels = {}): void {
    this.at(labels).value = value;
  }
  get(labels: Labels = {}): number {
    return this.series.get(labelText(labels))?.value ?? 0;
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.kind}`];
    for (const s of this.series.values()) out.push(`${this.name}${labelText(s.labels)} ${s.value}`);
    return out;
  }
}

class Histogram {
  private readonly data = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[],
  ) {}
  observe(value: number, labels: Labels = {}): void {
    const key = labelText(labels);
    let d = this.data.get(key);
    if (!d) this.data.set(key, (d = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    this.buckets.forEach((b, i) => {
      if (value <= b) d.counts[i] = (d.counts[i] ?? 0) + 1;
    });
    d.sum += value;
    d.count++;
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const d of this.data.values()) {
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket${labelText({ ...d.labels, le: String(b) })} ${d.counts[i] ?? 0}`));
      out.push(`${this.name}_bucket${labelText({ ...d.labels, le: "+Inf" })} ${d.count}`);
      out.push(`${this.name}_sum${labelText(d.labels)} ${d.sum}`);
      out.push(`${this.name}_count${labelText(d.labels)} ${d.count}`);
    }
    return out;
  }
}

/** What a cotal worker exports on /metrics. */
export class WorkerMetrics {
  readonly processed = new Metric("cotal_jobs_processed_total", "Jobs completed, by job type and outcome.", "counter");
  readonly failed = new Metric("cotal_jobs_failed_total", "Job attempts that failed, by job type and whether a retry follows.", "counter");
  readonly batchSize = new Histogram("cotal_batch_size", "Space-add jobs coalesced into one saga call (group commit).", [1, 2, 5, 10, 25, 50, 100, 200, 500, 1000]);
  readonly batchSeconds = new Histogram("cotal_batch_seconds", "Wall time of one group-committed saga call.", [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120]);
  readonly stepSeconds = new Histogram("cotal_saga_step_seconds", "Saga step durations (SagaEnv.onTiming).", [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10]);
  readonly generation = new Metric("cotal_inventory_generation", "Inventory generation after the last saga call of this worker.", "gauge");
  readonly reloads = new Metric("cotal_reloads_total", "Broker reloads this worker's saga calls performed.", "counter");
  readonly active = new Metric("cotal_jobs_active", "Jobs this worker holds right now, by job type.", "gauge");

  render(): string {
    return [
      ...this.processed.render(),
      ...this.failed.render(),
      ...this.batchSize.render(),
      ...this.batchSeconds.render(),
      ...this.stepSeconds.render(),
      ...this.generation.render(),
      ...this.reloads.render(),
      ...this.active.render(),
      "",
    ].join("\n");
  }
}
