import { existsSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { redactRedisUrl } from "@cotal/jobs";
import { isCotalError, redactSeeds, CotalError } from "@cotal/core";
import { GUARDS_ON, type Guards } from "@cotal/core/light";
import express from "express";
import { bullBoardFor } from "./bull-board.js";
import { hostHeaderAllowed, isLoopbackHost } from "./loopback.js";
import { readOnlyGuard } from "./read-only.js";
import { readTenantData } from "./tenant-data.js";
import { renderTenantPage } from "./tenant-page.js";
import { parseRefresh, parseSpaceQuery } from "./paging.js";
import { renderTenantDetail } from "./detail-page.js";
import { notFoundPage } from "./shell.js";
import { readTenantDetail } from "./tenant-detail.js";

export const DEFAULT_DASHBOARD_PORT = 8090;

export interface DashboardOptions {
  root: string;
  redisUrl: string;
  host: string;
  port: number;
  /** Bind a non-loopback host: the board has no login, so this is the operator's explicit choice. */
  allowRemote?: boolean;
  /** The guards the entry handed in (default: every guard on; docs/ablation.md). */
  guards?: Guards;
}

export interface Dashboard {
  url: string;
  close(): Promise<void>;
}

/**
 * The tenant pages' own headers: no script, style only inline, nothing from another host, not framed
 * (their favicon is inline too), and never cached: every request reads the root again.
 */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

function page(res: express.Response): express.Response {
  return res.type("html").set("cache-control", "no-store").set("content-security-policy", PAGE_CSP).set("x-content-type-options", "nosniff");
}

/** Refuses what must not be served, before anything listens: no root, or a host others can reach. */
export function assertServable(opts: DashboardOptions): void {
  if (!existsSync(opts.root)) throw new CotalError("root-missing", `no cotal root at ${opts.root}`, { next: "cotal up --detach   # or --root DIR" });
  if (!isLoopbackHost(opts.host) && !opts.allowRemote && !(opts.guards ?? GUARDS_ON).DASHBOARD_ANY_HOST) {
    throw new CotalError("invalid-argument", `--host ${opts.host} is not a loopback address; the dashboard has no login and shows every tenant and job`, {
      next: `cotal dashboard --host 127.0.0.1   # or, behind your own access control: cotal dashboard --host ${opts.host} --allow-remote`,
      details: { host: opts.host },
    });
  }
}

function listen(app: express.Express, opts: DashboardOptions): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen({ host: opts.host, port: opts.port });
    server.once("listening", () => resolve(server));
    server.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") {
        reject(new CotalError("port-in-use", `${opts.host}:${opts.port} is already in use by another process`, { next: `cotal dashboard --port ${opts.port + 1}   # or stop what listens there (ss -ltnp 'sport = :${opts.port}')`, details: { host: opts.host, port: opts.port } }));
      } else if (err.code === "EADDRNOTAVAIL") {
        reject(new CotalError("invalid-argument", `--host ${opts.host} is not an address of this machine`, { next: "cotal dashboard --host 127.0.0.1", details: { host: opts.host } }));
      } else reject(err);
    });
  });
}

/**
 * `cotal dashboard`: the tenant page (HTML at /tenants, JSON at /api/tenants) and Bull Board at
 * /queues. Every request reads the root again; nothing here writes to it, and no request but a GET
 * or HEAD is answered (405), so nothing reaching this port can act on the queues either.
 */
export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  assertServable(opts);
  const remote = !isLoopbackHost(opts.host);
  const guards = opts.guards ?? GUARDS_ON;
  const board = bullBoardFor({ root: opts.root, redisUrl: opts.redisUrl, basePath: "/queues", guards });
  const app = express();
  app.disable("x-powered-by");
  app.use(readOnlyGuard(guards)); // first: no write reaches any router, whatever the host or flags
  const names = new Set(["localhost", "127.0.0.1", "[::1]", opts.host.toLowerCase()]);
  app.use((req, res, next) => {
    if (remote || hostHeaderAllowed(req.headers.host, names, guards)) return next();
    res.status(421).type("text/plain").send("this dashboard answers only to its loopback address\n");
  });
  app.get("/", (_req, res) => res.redirect("tenants"));
  app.get("/tenants", async (req, res) => {
    if (req.path.endsWith("/")) return res.redirect("../tenants"); // the page's links are relative to /tenants
    const data = await readTenantData(opts);
    page(res).send(redactSeeds(renderTenantPage(data, parseSpaceQuery(req.query as Record<string, unknown>))));
  });
  app.get("/tenants/:name", async (req, res) => {
    const name = req.params.name;
    try {
      const d = await readTenantDetail({ ...opts, name });
      page(res).send(redactSeeds(renderTenantDetail(d, parseRefresh(req.query as Record<string, unknown>))));
    } catch (err) {
      if (!isCotalError(err) || (err.code !== "space-not-found" && err.code !== "invalid-space-name")) throw err;
      page(res).status(404).send(notFoundPage(`no space ${name} on this root`, "../"));
    }
  });
  app.get("/api/tenants", async (_req, res) => {
    res.type("json").set("cache-control", "no-store").send(redactSeeds(JSON.stringify(await readTenantData(opts))));
  });
  // Bull Board's API calls would wait for Redis forever; while it is away they fail at once instead.
  app.use("/queues/api", (_req, res, next) => {
    if (board.redisReady()) return next();
    res.status(503).json({ error: `Redis is unreachable at ${redactRedisUrl(opts.redisUrl)}; the tenant page (/tenants) still works`, message: "Redis is unreachable" });
  });
  app.use("/queues", board.router);
  app.use((_req, res) => {
    page(res).status(404).send(notFoundPage("no such page on this dashboard", "/"));
  });
  // The message only, never a stack (express's own handler prints one outside production).
  app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).type("text/plain").send(redactSeeds(`cotal dashboard: ${err.message}\n`));
  });
  let server: Server;
  try {
    server = await listen(app, opts);
  } catch (err) {
    await board.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  const shown = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${shown}:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await board.close();
    },
  };
}
