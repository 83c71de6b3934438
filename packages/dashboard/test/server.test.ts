import { createServer, type AddressInfo } from "node:net";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isCotalError } from "@cotal/core";
import { GUARDS_ON } from "@cotal/core/light";
import { acquireMaintenanceLock, releaseMaintenanceLock } from "@cotal/core/root";
import { createTempRoot, type TempRoot } from "@cotal/core/testing";
import { PAGE_CSP, assertServable, startDashboard, type Dashboard, type TenantPageData } from "../src/index.js";

/** A port nothing listens on, so Redis is "down" for these tests. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function get(url: string, host?: string): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, headers: host ? { host } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
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

  it("serves a tenant's own page from space info's read (broker stopped: usage not read), under a CSP that allows no script", async () => {
    const page = await get(`${dash.url}/tenants/alpha?refresh=0`);
    expect(page.status).toBe(200);
    expect(page.headers["content-security-policy"]).toBe(PAGE_CSP);
    expect(PAGE_CSP).toMatch(/^default-src 'none';/);
    expect(page.body).toContain("<h1>tenant alpha</h1>");
    expect(page.body).toContain('id="usage-not-read">usage: broker not running<');
    expect(page.body).toMatch(/<tr data-field="streams"><td>streams<\/td><td>—<\/td><td>\d+<\/td>/);
    expect(page.body).not.toContain("http-equiv");
    expect((await get(`${dash.url}/tenants/alpha`)).body).toContain('<meta http-equiv="refresh" content="5">');
  });

  it("an unknown or invalid tenant name is a 404 page with a link back; an unknown path too; no stack anywhere", async () => {
    for (const path of ["/tenants/nope", "/tenants/Not_A_Name", "/tenants/..%2Fetc"]) {
      const r = await get(`${dash.url}${path}`);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.body).toContain('<a href="../tenants" id="back">back to the tenants</a>');
      expect(r.body).not.toMatch(/\bat .*\.js:\d+/);
    }
    expect((await get(`${dash.url}/tenants/nope`)).body).toContain("no space nope on this root");
    const other = await get(`${dash.url}/no/such/page`);
    expect(other.status).toBe(404);
    expect(other.body).toContain('<a href="/tenants" id="back">');
    // the control: the known name is served
    expect((await get(`${dash.url}/tenants/alpha?refresh=0`)).status).toBe(200);
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
