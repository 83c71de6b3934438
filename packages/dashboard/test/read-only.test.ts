import { createServer, type AddressInfo } from "node:net";
import { request } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTempRoot, type TempRoot } from "@cotal/core/testing";
import { GUARDS_ON, type Guards } from "@cotal/core/light";
import { ALLOW_HEADER, methodAllowed, READ_ONLY_REFUSAL, readOnlyGuard } from "../src/read-only.js";
import { startDashboard, type Dashboard } from "../src/index.js";

const WRITES_ON = { ...GUARDS_ON, DASHBOARD_WRITES: true };
const WRITES = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "post", "FOO"];


/** A fake response that records what the guard did with it. */
function fakeRes(): { res: Response; sent: { status?: number; headers: Record<string, string>; body?: string } } {
  const sent: { status?: number; headers: Record<string, string>; body?: string } = { headers: {} };
  const res = {
    status(n: number) {
      sent.status = n;
      return res;
    },
    set(k: string, v: string) {
      sent.headers[k.toLowerCase()] = v;
      return res;
    },
    type() {
      return res;
    },
    send(b: string) {
      sent.body = b;
      return res;
    },
  };
  return { res: res as unknown as Response, sent };
}

function guard(method: string, guards: Guards = GUARDS_ON): { passed: boolean; sent: ReturnType<typeof fakeRes>["sent"] } {
  const { res, sent } = fakeRes();
  let passed = false;
  readOnlyGuard(guards)({ method } as Request, res, (() => (passed = true)) as NextFunction);
  return { passed, sent };
}

describe("the read-only method rule", () => {
  it("answers GET and HEAD only, in any case", () => {
    for (const m of ["GET", "HEAD", "get", "head"]) expect(methodAllowed(m, false), m).toBe(true);
    for (const m of WRITES) expect(methodAllowed(m, false), m).toBe(false);
  });

  it("the middleware refuses a write with 405 and Allow: GET, HEAD, and never calls the next handler", () => {
    for (const m of WRITES) {
      const r = guard(m);
      expect(r.passed, m).toBe(false);
      expect(r.sent, m).toEqual({ status: 405, headers: { allow: "GET, HEAD" }, body: READ_ONLY_REFUSAL });
    }
    expect(ALLOW_HEADER).toBe("GET, HEAD");
  });

  it("passes a GET and a HEAD on untouched (positive control)", () => {
    for (const m of ["GET", "HEAD"]) expect(guard(m)).toEqual({ passed: true, sent: { headers: {} } });
  });

  it("the test-only switch lets every method through (what the ablation cell shows)", () => {
    expect(methodAllowed("POST", WRITES_ON.DASHBOARD_WRITES)).toBe(true);
    expect(guard("PUT", WRITES_ON).passed).toBe(true);
  });
});

/** A port nothing listens on: Redis is down, so a request that reaches Bull Board's API gets its 503. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function send(url: string, method: string): Promise<{ status: number; allow: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const body = method === "GET" || method === "HEAD" ? "" : "{}";
    // content-length set by hand: Node sends a DELETE's body without one, which desyncs the kept-alive socket
    const headers = { origin: u.origin, "content-type": "application/json", "content-length": String(body.length) };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("the dashboard server, read-only whatever the flags", () => {
  let root: TempRoot;
  let redisUrl: string;
  const open: Dashboard[] = [];
  beforeAll(async () => {
    root = createTempRoot({ firstSpace: "alpha" });
    redisUrl = `redis://127.0.0.1:${await closedPort()}`;
  });
  afterAll(async () => {
    await Promise.all(open.map((d) => d.close()));
    root?.remove();
  });

  it("refuses writes before any router, on loopback and with --allow-remote; a GET reaches Bull Board's API", async () => {
    for (const allowRemote of [false, true]) {
      const d = await startDashboard({ root: root.layout.root, redisUrl, host: "127.0.0.1", port: 0, allowRemote });
      open.push(d);
      const api = `${d.url}/queues/api/queues/cotal-space-rm/add`;
      for (const m of ["POST", "PUT", "PATCH", "DELETE"]) {
        const r = await send(api, m);
        expect([m, r.status, r.allow, r.body]).toEqual([m, 405, "GET, HEAD", READ_ONLY_REFUSAL]);
      }
      // positive control: a read passes the guard and reaches the Redis-down answer in front of Bull Board
      expect((await send(`${d.url}/queues/api/queues`, "GET")).status).toBe(503);
    }
  });

  it("with the switch on, the same POST passes the guard and reaches Bull Board's API (503: Redis is down)", async () => {
    const d = await startDashboard({ root: root.layout.root, redisUrl, host: "127.0.0.1", port: 0, guards: WRITES_ON });
    open.push(d);
    expect((await send(`${d.url}/queues/api/queues/cotal-space-rm/add`, "POST")).status).toBe(503);
  });
});
