import { describe, expect, it } from "vitest";
import { request } from "node:http";
import { isListenHost, METRICS_HOST_DEFAULT, workerConfig } from "../src/config.js";
import { serveHealth } from "../src/http.js";

// The worker's /healthz and /metrics listen on loopback unless COTAL_WORKER_METRICS_HOST says otherwise:
// in compose the worker binds 0.0.0.0 so Prometheus on the compose network can scrape it (docs/service.md).
describe("the worker's metrics host", () => {
  it("loopback by default; COTAL_WORKER_METRICS_HOST moves it; a host the entry gives beats the environment", () => {
    expect(METRICS_HOST_DEFAULT).toBe("127.0.0.1");
    expect(workerConfig("/r", {}, { COTAL_WORKER_METRICS_PORT: "9464" }).http).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(workerConfig("/r", {}, { COTAL_WORKER_METRICS_PORT: "9464", COTAL_WORKER_METRICS_HOST: "0.0.0.0" }).http).toEqual({ host: "0.0.0.0", port: 9464 });
    expect(workerConfig("/r", { http: { port: 0 } }, { COTAL_WORKER_METRICS_HOST: "::" }).http).toEqual({ host: "::", port: 0 }); // the flag's port, the environment's host
    expect(workerConfig("/r", { http: { host: "127.0.0.2", port: 1 } }, { COTAL_WORKER_METRICS_HOST: "0.0.0.0" }).http).toEqual({ host: "127.0.0.2", port: 1 });
    expect(workerConfig("/r", {}, { COTAL_WORKER_METRICS_HOST: "0.0.0.0" }).http).toBeUndefined(); // a host alone serves nothing
    expect(workerConfig("/r", { http: { host: "0.0.0.0" } }, { COTAL_WORKER_METRICS_PORT: "9470" }).http).toEqual({ host: "0.0.0.0", port: 9470 }); // --metrics-host, the environment's port
    expect(workerConfig("/r", { http: { host: "0.0.0.0" } }, {}).http).toBeUndefined();
    expect(workerConfig("/r", {}, { COTAL_WORKER_METRICS_PORT: "1", COTAL_WORKER_METRICS_HOST: "" }).http?.host).toBe("127.0.0.1");
  });

  it("isListenHost: an IP literal or a host name, never a URL, a spaced or an empty value", () => {
    for (const good of ["0.0.0.0", "127.0.0.1", "::", "::1", "fe80::1", "localhost", "metrics.internal", "my_host-1"]) expect(isListenHost(good), good).toBe(true);
    for (const bad of ["", "http://0.0.0.0", "0.0.0.0 ", "a b", "[::1]", "host/x"]) expect(isListenHost(bad), bad).toBe(false);
  });

  it("a URL or a spaced value is refused naming the variable, not bound", () => {
    for (const bad of ["http://0.0.0.0", "0.0.0.0 ", "a b"]) {
      expect(() => workerConfig("/r", {}, { COTAL_WORKER_METRICS_PORT: "1", COTAL_WORKER_METRICS_HOST: bad })).toThrow(/COTAL_WORKER_METRICS_HOST/);
    }
  });

  it("serves on the configured host, and only reads: anything but GET or HEAD is 405", async () => {
    const { server, url } = await serveHealth({ health: () => ({ ok: true, status: "ok" }), metricsText: async () => "m 1\n", metricsContentType: "text/plain" }, { host: "0.0.0.0", port: 0 });
    try {
      const port = Number(new URL(url).port);
      expect(url).toBe(`http://0.0.0.0:${port}`);
      const call = (method: string, path: string): Promise<{ status: number; body: string }> =>
        new Promise((resolve, reject) => {
          const req = request({ host: "127.0.0.1", port, method, path }, (res) => {
            let body = "";
            res.on("data", (d: Buffer) => (body += d.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on("error", reject);
          req.end();
        });
      expect(await call("GET", "/healthz")).toEqual({ status: 200, body: "ok\n" });
      expect(await call("GET", "/metrics")).toEqual({ status: 200, body: "m 1\n" });
      expect((await call("POST", "/metrics")).status).toBe(405);
      expect((await call("DELETE", "/healthz")).status).toBe(405);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
