import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface HealthSource {
  /** "ok" while taking jobs; anything else is served as 503 with that text. */
  health(): { ok: boolean; status: string };
  metricsText(): Promise<string>;
  readonly metricsContentType: string;
}

/**
 * /healthz and /metrics (loopback unless the worker's config says otherwise: config.ts): health for the
 * supervisor, prom-client's exposition for Prometheus. Read-only by construction: nothing but these two reads.
 */
export async function serveHealth(source: HealthSource, opts: { host: string; port: number }): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    // Reachable beyond loopback in a container: anything but a read is refused before any route.
    if (req.method !== "GET" && req.method !== "HEAD") res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("read-only: GET /healthz or /metrics\n");
    else if (path === "/healthz") {
      const h = source.health();
      res.writeHead(h.ok ? 200 : 503, { "content-type": "text/plain; charset=utf-8" }).end(`${h.status}\n`);
    } else if (path === "/metrics") {
      source.metricsText().then(
        (text) => res.writeHead(200, { "content-type": source.metricsContentType }).end(text),
        (e: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(e as Error)?.message ?? String(e)}\n`),
      );
    } else res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /healthz or /metrics\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: opts.host, port: opts.port }, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return { server, url: `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${addr.port}` };
}
