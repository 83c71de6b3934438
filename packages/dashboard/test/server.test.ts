import { createServer, type AddressInfo } from "node:net";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GUARDS_ON, isCotalError } from "@cotal/saga";
import { acquireMaintenanceLock, releaseMaintenanceLock } from "@cotal/saga/root";
import { createTempRoot, type TempRoot } from "@cotal/saga/testing";
import { assertServable, startDashboard, type Dashboard, type TenantPageData } from "../src/index.js";

/** A port nothing listens on, so Redis is "down" for these tests. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function get(url: string, host?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, headers: host ? { host } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

let root: TempRoot;
let dash: Dashboard;
let redisUrl: string;

beforeAll(async () => {
  root = createTempRoot({ firstSpace: "alpha" });
  redisUrl = `redis://127.0.0.1:${await closedPort()}`;
  dash = await startDashboard({ root: root.layout.root, redisUrl, host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await dash?.close();
  root?.remove();
});

describe("dashboard server", () => {
  it("refuses a non-loopback host without --allow-remote, and a missing root, before listening", () => {
    const base = { root: root.layout.root, redisUrl, port: 0 };
    const codeOf = (f: () => void): string | undefined => {
      try {
        f();
      } catch (e) {
        return isCotalError(e) ? e.code : "other";
      }
      return undefined;
    };
    expect(codeOf(() => assertServable({ ...base, host: "0.0.0.0" }))).toBe("invalid-argument");
    expect(codeOf(() => assertServable({ ...base, host: "0.0.0.0", allowRemote: true }))).toBeUndefined();
    expect(codeOf(() => assertServable({ ...base, host: "::1" }))).toBeUndefined();
    expect(codeOf(() => assertServable({ ...base, root: "/nonexistent/cotal", host: "127.0.0.1" }))).toBe("root-missing");
  });

  it("serves the tenant page and its JSON from the core's read with the broker stopped and Redis down", async () => {
    const page = await get(`${dash.url}/tenants`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('data-space="alpha"');
    expect(page.body).toContain('id="redis-unreachable"');
    const json = JSON.parse((await get(`${dash.url}/api/tenants`)).body) as TenantPageData;
    expect(json.broker.running).toBe(false);
    expect(json.spaces.map((s) => [s.name, s.state])).toEqual([["alpha", "unknown"]]);
    expect(json.spaces[0]?.quota?.streams).toBeGreaterThan(0);
    expect(json.queues.reachable).toBe(false);
  });

  it("names the lock holder without the lock's token", async () => {
    const lock = acquireMaintenanceLock(root.layout.root, "cotal space add beta", GUARDS_ON);
    try {
      const body = (await get(`${dash.url}/api/tenants`)).body;
      const json = JSON.parse(body) as TenantPageData;
      expect(json.lock).toMatchObject({ pid: process.pid, purpose: "cotal space add beta", status: "alive" });
      expect(body).not.toContain(lock.owner.token);
      expect((await get(`${dash.url}/tenants`)).body).toMatch(/id="lock">pid \d+ on .*cotal space add beta, alive/);
    } finally {
      releaseMaintenanceLock(lock);
    }
  });

  it("answers Bull Board's API with 503 while Redis is away instead of hanging", async () => {
    const r = await get(`${dash.url}/queues/api/queues`);
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/Redis is unreachable/);
  });

  it("answers only its own Host header (421 for a rebinding name)", async () => {
    expect((await get(`${dash.url}/api/tenants`, "rebind.example")).status).toBe(421);
    expect((await get(`${dash.url}/api/tenants`)).status).toBe(200);
  });

  it("refuses a port already taken with port-in-use", async () => {
    const port = Number(new URL(dash.url).port);
    const err = await startDashboard({ root: root.layout.root, redisUrl, host: "127.0.0.1", port }).then(
      (d) => d.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(isCotalError(err) ? err.code : err).toBe("port-in-use");
  });
});
