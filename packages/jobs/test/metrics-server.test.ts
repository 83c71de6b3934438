import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePromText, promValue } from "@cotal/harness";
import { isCotalError } from "@cotal/core/errors";
import { startMetricsServer, type MetricsServer } from "../src/index.js";

// No root here: status reads "absent", which is all these cells need (the HTTP edge, not the reads).
const dir = mkdtempSync(join(tmpdir(), "cotal-metrics-srv-"));
const root = join(dir, "no-root");
let srv: MetricsServer;

beforeAll(async () => {
  srv = await startMetricsServer({ root, host: "127.0.0.1", port: 0, maxAgeMs: 0 });
});
afterAll(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A raw request, so the Host header is the test's to choose. */
function send(method: string, path: string, host?: string): Promise<{ status: number; allow?: string; body: string }> {
  const u = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, agent: false, headers: host ? { host } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (s: string) => (body += s));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ...(res.headers.allow ? { allow: res.headers.allow } : {}), body }));
    });
    req.on("error", reject);
    req.end(method === "GET" || method === "HEAD" ? undefined : "x=1");
  });
}

describe("cotal metrics' server: read-only by construction", () => {
  it("GET /metrics is the exposition, every series labelled by root, parsed by the strict parser", async () => {
    const r = await send("GET", "/metrics");
    expect(r.status).toBe(200);
    const fams = parsePromText(r.body);
    expect(promValue(fams, "cotal_root_state", { root, state: "absent" })).toBe(1);
    expect(fams.get("process_resident_memory_bytes")?.samples[0]?.labels.root).toBe(root);
  });

  it("GET /healthz answers ok", async () => {
    expect(await send("GET", "/healthz")).toMatchObject({ status: 200, body: "ok\n" });
  });

  it.each(["POST", "PUT", "DELETE", "PATCH"])("%s is 405 with Allow: GET, HEAD, on /metrics and /healthz", async (method) => {
    for (const path of ["/metrics", "/healthz"]) {
      const r = await send(method, path);
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.allow).toBe("GET, HEAD");
    }
  });

  it("any other path is 404", async () => {
    expect((await send("GET", "/api/tenants")).status).toBe(404);
  });

  it("a Host header that is not a loopback name is refused 421 (DNS rebinding)", async () => {
    expect((await send("GET", "/metrics", "evil.example:9465")).status).toBe(421);
    expect((await send("GET", "/metrics", "localhost:9465")).status).toBe(200);
  });

  it("a non-loopback --host without allowRemote is refused invalid-argument before anything listens", async () => {
    const e = await startMetricsServer({ root, host: "0.0.0.0", port: 0 }).then(
      (s) => (void s.close(), undefined),
      (err: unknown) => err,
    );
    expect(isCotalError(e, "invalid-argument")).toBe(true);
    expect((e as Error).message).toMatch(/not a loopback address/);
  });

  it("Redis down: the scrape still answers, without queue series, and counts the failed Redis read", async () => {
    const down = await startMetricsServer({ root, host: "127.0.0.1", port: 0, maxAgeMs: 0, redisUrl: "redis://127.0.0.1:1" });
    try {
      const t0 = Date.now();
      const fams = parsePromText(await (await fetch(`${down.url}/metrics`)).text());
      expect(Date.now() - t0, "fail-fast, not a wait per command").toBeLessThan(4_000);
      expect(fams.get("cotal_queue_jobs")?.samples).toEqual([]);
      expect(promValue(fams, "cotal_exporter_read_failures_total", { root, source: "redis" })).toBe(1);
      expect(promValue(fams, "cotal_root_state", { root, state: "absent" })).toBe(1);
    } finally {
      await down.close();
    }
  });

  it("a port in use is refused port-in-use, naming the next port", async () => {
    const port = Number(new URL(srv.url).port);
    const e = await startMetricsServer({ root, host: "127.0.0.1", port }).then(
      (s) => (void s.close(), undefined),
      (err: unknown) => err,
    );
    expect(isCotalError(e, "port-in-use")).toBe(true);
  });
});
