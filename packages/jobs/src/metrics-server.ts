import { createServer, type Server } from "node:http";
import { isIP, type AddressInfo } from "node:net";
import { collectDefaultMetrics, Registry } from "prom-client";
import { CotalError } from "@cotal/core/errors";
import type { Guards } from "@cotal/core/light";
import { exportRoot } from "./root-exporter.js";
import { rootReads } from "./root-reads.js";

/**
 * `cotal metrics` (docs/metrics.md): the root's series on a port of their own, with no worker
 * running. Read-only by construction: GET (and HEAD) of /metrics and /healthz are all it answers;
 * every other method is 405 before any read, and nothing it calls writes.
 */
export interface MetricsServerOptions {
  /** The root's real path: the `root` label on every series, and the queues' key. */
  root: string;
  host: string;
  port: number;
  guards?: Guards;
  /** Queue depth and backup series come from this Redis; none: those series are absent. */
  redisUrl?: string;
  /** A snapshot this young is served without a new read (default 10 s). */
  maxAgeMs?: number;
  /** Each space's usage is read again at most this often (default 60 s; root-reads.ts). */
  usageMaxAgeMs?: number;
  /** How long a scrape waits for a read in flight (default 5 s), then serves the last snapshot. */
  waitMs?: number;
  /** Serve a non-loopback host, and any Host header (the operator's explicit choice: Prometheus on another machine). */
  allowRemote?: boolean;
}

export interface MetricsServer {
  url: string;
  registry: Registry;
  close(): Promise<void>;
}

/** The methods a read-only endpoint answers; the rest get 405 with this Allow. */
const READ_METHODS = new Set(["GET", "HEAD"]);

/** Hosts only this machine reaches: 127.0.0.0/8, ::1 and localhost (as the dashboard's loopback.ts). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return isIP(h) === 6 && (h === "::1" || h === "0:0:0:0:0:0:0:1");
}

/** The Host header without its port ("[::1]:9465" → "[::1]"). */
function hostOfHeader(header: string): string {
  return header.startsWith("[") ? header.slice(0, header.indexOf("]") + 1) : header.split(":")[0] ?? "";
}

/**
 * The request handler, apart from the listener so a test can drive it. `loopbackOnly`: a Host header
 * that is not a loopback name is refused (421, as the dashboard does), so a page whose DNS name rebinds to 127.0.0.1 cannot
 * read the tenants through the operator's browser.
 */
export function metricsHandler(render: () => Promise<string>, contentType: string, loopbackOnly = true): Parameters<typeof createServer>[1] {
  return (req, res) => {
    req.resume(); // a body is never read, only drained, so the connection stays usable
    const path = (req.url ?? "/").split("?")[0];
    if (loopbackOnly && !isLoopbackHost(hostOfHeader(req.headers.host ?? ""))) {
      res.writeHead(421, { "content-type": "text/plain" }).end("refused: this endpoint answers loopback names only (cotal metrics --allow-remote serves others)\n");
    } else if (path !== "/metrics" && path !== "/healthz") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics or /healthz\n");
    } else if (!READ_METHODS.has(req.method ?? "")) {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end(`${req.method} refused: cotal metrics is read-only (GET, HEAD)\n`);
    } else if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("ok\n");
    } else {
      render().then(
        (text) => res.writeHead(200, { "content-type": contentType }).end(req.method === "HEAD" ? undefined : text),
        (e: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(e as Error)?.message ?? String(e)}\n`),
      );
    }
  };
}

export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  if (!isLoopbackHost(opts.host) && opts.allowRemote !== true) {
    throw new CotalError("invalid-argument", `--host ${opts.host} is not a loopback address: anyone who reaches it reads every tenant's name and usage`, { next: `cotal metrics --host ${opts.host} --port ${opts.port} --allow-remote` });
  }
  const registry = new Registry();
  registry.setDefaultLabels({ root: opts.root });
  collectDefaultMetrics({ register: registry });
  const reads = rootReads({
    root: opts.root,
    ...(opts.guards ? { guards: opts.guards } : {}),
    ...(opts.redisUrl ? { redisUrl: opts.redisUrl } : {}),
    ...(opts.usageMaxAgeMs !== undefined ? { usageMaxAgeMs: opts.usageMaxAgeMs } : {}),
  });
  exportRoot({ registry, read: () => reads.read(), ...(opts.maxAgeMs !== undefined ? { maxAgeMs: opts.maxAgeMs } : {}), ...(opts.waitMs !== undefined ? { waitMs: opts.waitMs } : {}) });
  const server = createServer(metricsHandler(() => registry.metrics(), registry.contentType, opts.allowRemote !== true));
  try {
    await listen(server, opts.host, opts.port);
  } catch (err) {
    await reads.close();
    throw err;
  }
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${addr.port}`,
    registry,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await reads.close();
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code !== "EADDRINUSE") return reject(e);
      reject(new CotalError("port-in-use", `${host}:${port} is already in use by another process`, { next: `cotal metrics --port ${port + 1}   # or stop what listens there (ss -ltnp 'sport = :${port}')`, details: { host, port } }));
    });
    server.listen({ host, port }, () => resolve());
  });
}
