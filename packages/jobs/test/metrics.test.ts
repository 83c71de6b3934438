import { afterEach, describe, expect, it } from "vitest";
import { parsePromText, promValue } from "@cotal/harness";
import { serveHealth, WorkerMetrics } from "../src/index.js";

const servers: { close(cb: () => void): void }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

async function scrape(m: WorkerMetrics): Promise<Map<string, ReturnType<typeof parsePromText> extends Map<string, infer F> ? F : never>> {
  const { server, url } = await serveHealth({ health: () => ({ ok: true, status: "ok" }), metricsText: () => m.render(), metricsContentType: m.contentType }, { host: "127.0.0.1", port: 0 });
  servers.push(server);
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePromText(await res.text());
}

describe("worker metrics through prom-client", () => {
  it("serves process metrics and every cotal family with its declared type", async () => {
    const fams = await scrape(new WorkerMetrics());
    for (const [name, type] of [
      ["process_cpu_user_seconds_total", "counter"],
      ["process_resident_memory_bytes", "gauge"],
      ["nodejs_eventloop_lag_seconds", "gauge"],
      ["cotal_jobs_processed_total", "counter"],
      ["cotal_jobs_failed_total", "counter"],
      ["cotal_jobs_active", "gauge"],
      ["cotal_batch_size", "histogram"],
      ["cotal_batch_seconds", "histogram"],
      ["cotal_saga_step_seconds", "histogram"],
      ["cotal_inventory_generation", "gauge"],
      ["cotal_inventory_applied_generation", "gauge"],
      ["cotal_reloads_total", "counter"],
    ] as const) {
      expect(fams.get(name)?.type, name).toBe(type);
    }
    expect(promValue(fams, "cotal_reloads_total")).toBe(0);
  });

  it("the values move with the work recorded: a processed job, a batch, saga steps, a commit", async () => {
    const m = new WorkerMetrics();
    const before = await scrape(m);
    expect(promValue(before, "cotal_jobs_processed_total", { type: "space-add", outcome: "added" })).toBeUndefined();

    m.processed.inc({ type: "space-add", outcome: "added" });
    m.processed.inc({ type: "space-add", outcome: "added" });
    m.failed.inc({ type: "space-rm", final: "false" });
    m.batchSize.observe(3);
    m.stepSeconds.observe({ step: "reload-proof" }, 0.2);
    m.sagaResult({ outcome: "committed", generation: 7, reloads: 1 });
    m.sagaResult({ outcome: "promoted", generation: 8, reloads: 0 }); // broker down: applied stays at 7

    const after = await scrape(m);
    expect(promValue(after, "cotal_jobs_processed_total", { type: "space-add", outcome: "added" })).toBe(2);
    expect(promValue(after, "cotal_jobs_failed_total", { type: "space-rm", final: "false" })).toBe(1);
    expect(promValue(after, "cotal_batch_size_count")).toBe(1);
    expect(promValue(after, "cotal_batch_size_bucket", { le: "2" })).toBe(0);
    expect(promValue(after, "cotal_batch_size_bucket", { le: "5" })).toBe(1);
    expect(promValue(after, "cotal_batch_size_sum")).toBe(3);
    expect(promValue(after, "cotal_saga_step_seconds_count", { step: "reload-proof" })).toBe(1);
    expect(promValue(after, "cotal_saga_step_seconds_bucket", { step: "reload-proof", le: "0.25" })).toBe(1);
    expect(promValue(after, "cotal_inventory_generation")).toBe(8);
    expect(promValue(after, "cotal_inventory_applied_generation")).toBe(7);
    expect(promValue(after, "cotal_reloads_total")).toBe(1);
  });

  it("two workers in one process keep separate registries", async () => {
    const a = new WorkerMetrics();
    const b = new WorkerMetrics();
    a.reloads.inc(3);
    expect(promValue(await scrape(b), "cotal_reloads_total")).toBe(0);
    expect(promValue(await scrape(a), "cotal_reloads_total")).toBe(3);
  });
});

describe("cotal_quiesced_tenants", () => {
  it("reads its source at scrape time, at most once per interval", async () => {
    let n = 0;
    let reads = 0;
    const m = new WorkerMetrics(() => (reads++, n), 0);
    expect(promValue(await scrape(m), "cotal_quiesced_tenants")).toBe(0);
    n = 1;
    expect(promValue(await scrape(m), "cotal_quiesced_tenants")).toBe(1); // moves with the root
    const slow = new WorkerMetrics(() => (reads++, n), 60_000);
    await scrape(slow);
    n = 2;
    expect(promValue(await scrape(slow), "cotal_quiesced_tenants")).toBe(1); // cached within the interval
    expect(reads).toBe(3);
  });

  it("is absent without a source (no root to read)", async () => {
    expect((await scrape(new WorkerMetrics())).get("cotal_quiesced_tenants")).toBeUndefined();
  });
});
