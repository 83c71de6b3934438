import { mkdirSync } from "node:fs";
import { request } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { TenantPageData } from "@cotal/dashboard";
import { startDashboard, type LiveDashboard } from "../fixtures/dashboard.js";
import { startRedis, startWorker, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { until } from "../fixtures/until.js";
import { liveRoot, type LiveRoot } from "../fixtures/live-root.js";
import { REPORT_DIR } from "../fixtures/matrix.js";

// Debian's Chromium, never a downloaded browser (infra/setup.sh installs it).
const CHROMIUM = process.env.COTAL_CHROMIUM ?? "/usr/bin/chromium";
const SHOTS = join(process.env.COTAL_TEST_REPORT_DIR ?? REPORT_DIR, "screenshots");

let r: LiveRoot;
let redis: LiveRedis | undefined;
let worker: LiveWorker | undefined;
let dash: LiveDashboard | undefined;
let browser: Browser | undefined;
let page: Page;
let env: Record<string, string>;

beforeAll(async () => {
  r = await liveRoot("cotal-dash-");
  redis = await startRedis();
  env = { REDIS_URL: redis.url };
  const [up] = await Promise.all([
    r.cotal(["up", "--detach", "--space", "alpha", "--port", String(r.port)]),
    chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] }).then((b) => (browser = b)),
  ]);
  expect(up.code, up.stderr).toBe(0);
  dash = await startDashboard(r.root, env);
  page = await (browser as Browser).newPage({ viewport: { width: 1400, height: 900 } });
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await dash?.stop();
  await worker?.kill();
  await r?.dispose();
  await redis?.stop();
  await harnessTeardown();
});

const row = (name: string) => page.locator(`#spaces tr[data-space="${name}"]`);

async function tenantsJson(): Promise<TenantPageData> {
  const res = await fetch(`${dash?.url}/api/tenants`);
  expect(res.status).toBe(200);
  return (await res.json()) as TenantPageData;
}

/** A request with headers set by hand, as a rebinding or cross-site page's request would carry them. */
function rawRequest(url: string, headers: Record<string, string>, method = "GET"): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("cotal dashboard in headless Chromium", () => {
  it("the tenant page shows a space added through the CLI, and one through the queue, after a reload; Bull Board shows the queue", async () => {
    await page.goto(`${dash?.url}/tenants`);
    await expect.poll(() => row("alpha").locator(".state").textContent(), { timeout: 30_000 }).toBe("active");
    // positive control: the page does not show spaces that do not exist yet
    expect(await row("beta").count()).toBe(0);
    expect(await row("gamma").count()).toBe(0);
    expect(await page.locator("#generation").textContent()).toBe("1");

    const add = await r.cotal(["space", "add", "beta"], { env });
    expect(add.code, add.stderr).toBe(0);
    await page.reload();
    expect(await row("beta").locator(".state").textContent()).toBe("active");
    expect(await page.locator("#generation").textContent()).toBe("2");
    expect(await page.locator("#applied-generation").textContent()).toBe("2");
    expect(await page.locator("#pending").textContent()).toBe("none");

    // a queued add waits for a worker: Bull Board shows the job, the tenant page not yet the space
    const queued = await r.cotal(["space", "add", "gamma", "--queue", "--no-wait"], { env });
    expect(queued.code, queued.stderr).toBe(0);
    const sched = await r.cotal(["space", "backup", "alpha", "--queue", "--every", "0 3 1 1 *", "--out", join(r.root, "..", "backups")], { env });
    expect(sched.code, sched.stderr).toBe(0);
    await page.reload();
    expect(await row("gamma").count()).toBe(0);
    expect(await page.locator('#queues tr[data-queue="space-add"] td').nth(2).textContent()).toBe("1"); // waiting
    expect(await row("alpha").locator(".backup").textContent()).toMatch(/scheduled 0 3 1 1 \*, next \d{4}-/);

    const data0 = await tenantsJson();
    const queueName = data0.queues.reachable ? data0.queues.queues.find((q) => q.type === "space-add")?.queue : undefined;
    expect(queueName).toBeTruthy();
    await page.goto(`${dash?.url}/queues`);
    await page.getByText("space-add", { exact: true }).first().waitFor({ timeout: 15_000 });
    await page.goto(`${dash?.url}/queues/queue/${encodeURIComponent(queueName ?? "")}?status=waiting`);
    await page.getByText(/gamma/).first().waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(SHOTS, "dashboard-bull-board.png"), fullPage: true });

    worker = startWorker("cli", { root: r.root, redisUrl: redis?.url ?? "", args: ["--batch-wait", "0"] });
    await worker.ready();
    await page.goto(`${dash?.url}/tenants`);
    await until("the queued space on the page", async () => {
      await page.reload();
      return (await row("gamma").locator(".state").count()) > 0 && (await row("gamma").locator(".state").textContent()) === "active";
    }, 30_000, 250);
    expect(await page.locator('#queues tr[data-queue="space-add"] td').nth(2).textContent()).toBe("0");
    await page.screenshot({ path: join(SHOTS, "dashboard-tenants.png"), fullPage: true });

    // the filter form, submitted by the browser: only the matching space is listed, the others stay a click away
    await page.locator('#filter input[name="q"]').fill("amm");
    await page.locator('#filter button[type="submit"]').click();
    await page.waitForURL(/\/tenants\?q=amm/);
    expect(await page.locator("#spaces tr[data-space]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-space")))).toEqual(["gamma"]);
    expect(await page.locator("#pager").textContent()).toMatch(/showing 1–1 of 1 \(of 3 spaces\)/);
    await page.locator("#states a", { hasText: "active" }).click();
    expect(await page.locator("#spaces tr[data-space]").count()).toBe(1); // the state link keeps the name filter

    // the JSON endpoint carries the same read: the core's state, generations and each space's quota
    const data = await tenantsJson();
    expect(data.state).toBe("clean");
    expect(data.generation).toBe(3);
    expect(data.appliedGeneration).toBe(3);
    expect(data.spaces.map((s) => s.name)).toEqual(["alpha", "beta", "gamma"]);
    for (const s of data.spaces) expect(s.quota?.disk, s.name).toBeGreaterThan(0);
    expect(data.spaces.find((s) => s.name === "alpha")?.backupSchedule?.every).toBe("0 3 1 1 *");
  });

  it("refuses a job action from another origin with 403 and takes it from its own pages", async () => {
    const data = await tenantsJson();
    const queue = data.queues.reachable ? data.queues.queues.find((q) => q.type === "space-add")?.queue : undefined;
    expect(queue).toBeTruthy();
    const url = `${dash?.url}/queues/api/queues/${encodeURIComponent(queue ?? "")}/retry/failed`;
    expect(await rawRequest(url, { origin: dash?.url ?? "" }, "PUT")).toBe(200); // positive control: Bull Board takes it from its own origin
    expect(await rawRequest(url, { origin: "http://evil.example" }, "PUT")).toBe(403);
  });

  it("with Redis down the tenant page still renders and its queues section says Redis is unreachable", async () => {
    await page.goto(`${dash?.url}/tenants`);
    expect(await page.locator("#redis-unreachable").count()).toBe(0); // positive control: Redis is up
    await worker?.kill();
    await redis?.stop();
    redis = undefined;
    await until("the page to see Redis gone", async () => {
      await page.reload();
      return (await page.locator("#redis-unreachable").count()) > 0;
    }, 15_000, 200);
    expect(await page.locator("#redis-unreachable").textContent()).toMatch(/Redis is unreachable/);
    for (const n of ["alpha", "beta", "gamma"]) expect(await row(n).locator(".state").textContent(), n).toBe("active");
    await page.screenshot({ path: join(SHOTS, "dashboard-redis-down.png"), fullPage: true });
  });

  it("refuses a non-loopback host with exit 2 [invalid-argument] and serves nothing", async () => {
    const res = await r.cotal(["dashboard", "--host", "0.0.0.0", "--port", "0"], { env, timeoutMs: 8_000 });
    expect(res.timedOut, `it served:\n${res.stdout}`).toBe(false);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/\[invalid-argument\]/);
    expect(res.stderr).toMatch(/next: cotal dashboard --host 127\.0\.0\.1/);
  });

  it("refuses a port already taken with exit 6 [port-in-use]", async () => {
    const blocker = createServer();
    await new Promise<void>((ok) => blocker.listen(0, "127.0.0.1", ok));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const res = await r.cotal(["dashboard", "--port", String(port)], { env, timeoutMs: 15_000 });
      expect(res.code, res.stderr).toBe(6);
      expect(res.stderr).toMatch(/\[port-in-use\]/);
      expect(res.stderr).toMatch(new RegExp(`next: cotal dashboard --port ${port + 1}`));
    } finally {
      blocker.close();
    }
  });

  it("answers a foreign Host header with 421 (DNS rebinding) and its own with 200", async () => {
    const url = `${dash?.url}/api/tenants`;
    expect(await rawRequest(url, { host: new URL(url).host })).toBe(200); // positive control: the same request under our own name
    expect(await rawRequest(url, { host: "rebind.example:80" })).toBe(421);
  });
});
