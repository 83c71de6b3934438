import { spawnSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harnessTeardown, repoRoot } from "@cotal/harness";
import { READ_ONLY_REFUSAL, queueMenuName, type TenantPageData } from "@cotal/dashboard";
import { JOB_TYPES, openQueue, rootKeyFor } from "@cotal/jobs";
import { FAILPOINT_EXIT_CODE, type SpaceListReport } from "@cotal/core";
import { startDashboard, type LiveDashboard } from "../fixtures/dashboard.js";
import { startRedis, startWorker, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { until } from "../fixtures/until.js";
import { liveRoot, type LiveRoot } from "../fixtures/live-root.js";

// Debian's Chromium, never a downloaded browser (infra/setup.sh installs it).
const CHROMIUM = process.env.COTAL_CHROMIUM ?? "/usr/bin/chromium";
// Kept as test artifacts beside the reports: .test-results/dashboard/, or $COTAL_TEST_REPORT_DIR/dashboard/.
const SHOTS = join(process.env.COTAL_TEST_REPORT_DIR ?? join(repoRoot(), ".test-results"), "dashboard");

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

/** A request with a method, headers and a JSON body set by hand; the answer's status, Allow header and text. */
function send(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; allow: string | undefined; body: string }> {
  const text = body === undefined ? "" : JSON.stringify(body);
  // content-length by hand: Node sends a DELETE's body without one, which would desync the kept-alive socket
  const all = { ...headers, ...(text ? { "content-type": "application/json" } : {}), "content-length": String(Buffer.byteLength(text)) };
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, headers: all }, (res) => {
      let got = "";
      res.setEncoding("utf8").on("data", (c: string) => (got += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body: got }));
    });
    req.on("error", reject);
    req.end(text);
  });
}

/** Every cotal queue of this root read straight from Redis (BullMQ, not the board): counts, paused, schedulers, each job's data. */
async function queueSnapshot(named: ReadonlyMap<string, string>): Promise<Record<string, { name: string; counts: Record<string, number>; paused: boolean; schedulers: number; jobs: { id: string; data: unknown }[] }>> {
  const out: Awaited<ReturnType<typeof queueSnapshot>> = {};
  for (const type of JOB_TYPES) {
    const q = openQueue(type, rootKeyFor(r.root), redis?.url ?? "");
    try {
      expect(q.name, "the queue the board shows").toBe(named.get(type));
      const jobs = (await q.getJobs()).filter((j) => j !== undefined).map((j) => ({ id: String(j.id), data: j.data as unknown }));
      out[type] = { name: q.name, counts: await q.getJobCounts(), paused: await q.isPaused(), schedulers: await q.getJobSchedulersCount(), jobs: jobs.sort((a, b) => (a.id < b.id ? -1 : 1)) };
    } finally {
      await q.close();
    }
  }
  return out;
}

/** `cotal space list --json`, as name → state. */
async function listedStates(): Promise<Record<string, string>> {
  const res = await r.cotal(["space", "list", "--json"], { env });
  expect(res.code, res.stderr).toBe(0);
  return Object.fromEntries((JSON.parse(res.stdout) as SpaceListReport).spaces.map((x) => [x.name, x.state]));
}

/** The colour the browser renders an element in (this package has no DOM types: the page's own global). */
const colorOf = (l: Locator): Promise<string> => l.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color);

/** The tenant page and its JSON show the state, marked in the warning colour, never active's green. */
async function expectShown(name: string, state: string): Promise<void> {
  expect((await tenantsJson()).spaces.find((x) => x.name === name)?.state).toBe(state);
  await page.goto(`${dash?.url}/tenants?refresh=0`);
  const cell = row(name).locator(".state");
  expect(await cell.textContent()).toBe(state);
  expect(await colorOf(cell)).toBe("rgb(170, 68, 0)");
  expect(await colorOf(row("beta").locator(".state"))).toBe("rgb(0, 119, 0)"); // control: active is green
  await page.screenshot({ path: join(SHOTS, `dashboard-${state}.png`), fullPage: true });
}

describe("cotal dashboard in headless Chromium", () => {
  it("the tenant page shows a space added through the CLI, and one through the queue, after a reload; Bull Board shows the queue", async () => {
    await page.goto(`${dash?.url}/tenants?refresh=0`);
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
    expect(queueName).toMatch(/^space-add\.root_[0-9a-f]+$/); // Redis keeps the workers' name
    const hash = (queueName ?? "").slice("space-add.".length);
    await page.goto(`${dash?.url}/queues`);
    await page.getByText(`space add (root ${r.root})`).first().waitFor({ timeout: 15_000 });
    // Bull Board's side menu, its cards and a queue's header: the verb, readable, never the root's hash
    const menu = page.locator('nav a[href*="/queues/queue/"]');
    expect(await menu.allTextContents()).toEqual(JOB_TYPES.map((t) => `space ${t.slice("space-".length)}`)); // the verbs as the CLI spells them
    expect(await menu.first().getAttribute("href")).toBe("/queues/queue/space%20add");
    expect(await page.locator("nav").first().innerText()).not.toContain(hash);
    expect(await page.getByText(/\(root \//).allTextContents()).toEqual(expect.arrayContaining(JOB_TYPES.map((t) => `space ${t.slice("space-".length)} (root ${r.root})`)));
    await menu.first().click();
    await page.waitForURL(/\/queues\/queue\/space%20add/);
    expect(await page.locator("h1").first().textContent()).toBe(`space add (root ${r.root})`);
    await page.goto(`${dash?.url}/queues/queue/${encodeURIComponent(queueMenuName("space-add"))}?status=waiting`);
    await page.getByText(/gamma/).first().waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(SHOTS, "dashboard-bull-board.png"), fullPage: true });

    worker = startWorker("cli", { root: r.root, redisUrl: redis?.url ?? "", args: ["--batch-wait", "0"] });
    await worker.ready();
    await page.goto(`${dash?.url}/tenants?refresh=0`);
    await until("the queued space on the page", async () => {
      await page.reload();
      return (await row("gamma").locator(".state").count()) > 0 && (await row("gamma").locator(".state").textContent()) === "active";
    }, 30_000, 250);
    expect(await page.locator('#queues tr[data-queue="space-add"] td').nth(2).textContent()).toBe("0");
    await page.screenshot({ path: join(SHOTS, "dashboard-tenants.png"), fullPage: true });

    // the filter form, submitted by the browser: only the matching space is listed, the others stay a click away
    await page.locator('#filter input[name="q"]').fill("amm");
    await page.locator('#filter button[type="submit"]').click();
    await page.waitForURL(/\/tenants\?q=amm.*refresh=0/);
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

  it("refuses every non-GET with 405 before Bull Board, own Origin or not: nothing is enqueued, paused or emptied, the tenant stays", async () => {
    const data = await tenantsJson();
    expect(data.queues.reachable).toBe(true);
    const named = new Map(data.queues.reachable ? data.queues.queues.map((q) => [q.type, q.queue]) : []);
    const rmQueue = queueMenuName("space-rm"); // the board's name of it; Redis's is named.get("space-rm")
    const before = await queueSnapshot(named);
    const jobId = Object.values(before).flatMap((q) => q.jobs.map((j) => j.id))[0] ?? "1"; // a real job where one exists
    const api = `${dash?.url}/queues/api`;
    const q = `${api}/queues/${encodeURIComponent(rmQueue)}`;
    // Bull Board's own write routes (node_modules/@bull-board/api/dist/routes.js), then a DELETE it has no route for
    const writes: [string, string, unknown][] = [
      ["POST", `${q}/add`, { name: "space-rm", data: { name: "alpha" } }],
      ["PUT", `${q}/pause`, {}],
      ["PUT", `${api}/queues/pause`, {}],
      ["PUT", `${q}/empty`, {}],
      ["PUT", `${q}/obliterate`, {}],
      ["PUT", `${q}/clean/completed`, {}],
      ["PUT", `${q}/retry/failed`, {}],
      ["PUT", `${q}/promote`, {}],
      ["PUT", `${q}/${jobId}/promote`, {}],
      ["PATCH", `${q}/${jobId}/update-data`, { data: { name: "alpha" } }],
      ["DELETE", q, undefined],
    ];
    const origin = new URL(dash?.url ?? "").origin;
    for (const [method, url, body] of writes) {
      for (const headers of [{ origin }, {}] as Record<string, string>[]) {
        const res = await send(url, method, headers, body);
        // which refusal: cotal's guard (its body, Allow header), not Bull Board's own read-only 405
        expect({ method, url, ...headers, status: res.status, allow: res.allow, body: res.body }).toEqual({ method, url, ...headers, status: 405, allow: "GET, HEAD", body: READ_ONLY_REFUSAL });
      }
    }
    // positive control: the same API answers a read, and Bull Board itself is mounted read-only
    const read = await send(`${api}/queues`, "GET", { origin });
    expect(read.status).toBe(200);
    const board = JSON.parse(read.body) as { queues: { name: string; readOnlyMode: boolean }[] };
    expect(board.queues.map((x) => [x.name, x.readOnlyMode]).sort()).toEqual([...named.keys()].map((t) => [queueMenuName(t), true]).sort());
    expect((await send(`${api}/queues`, "HEAD", {})).status).toBe(200);

    expect(await queueSnapshot(named)).toEqual(before);
    const list = await r.cotal(["space", "list", "--json"], { env });
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as SpaceListReport).spaces.find((x) => x.name === "alpha")?.state).toBe("active");
  });

  it("with COTAL_TEST_UNSAFE_DASHBOARD_WRITES=1 a dashboard takes the same POST and a job appears (the ablation row's red)", async () => {
    const unsafeDash = await startDashboard(r.root, { ...env, COTAL_TEST_UNSAFE_DASHBOARD_WRITES: "1" });
    const rm = openQueue("space-rm", rootKeyFor(r.root), redis?.url ?? "");
    try {
      // the new process's board connects to Redis first (until then its API answers 503 at once)
      await until("the unsafe dashboard's board to reach Redis", async () => (await send(`${unsafeDash.url}/queues/api/queues`, "GET", {})).status === 200, 15_000, 100);
      const before = await rm.getJobCounts();
      // a space that does not exist and a delay: the running worker must not act on what this cell adds
      const res = await send(`${unsafeDash.url}/queues/api/queues/${encodeURIComponent(queueMenuName("space-rm"))}/add`, "POST", { origin: new URL(unsafeDash.url).origin }, { name: "space-rm", data: { name: "ghost" }, options: { delay: 3_600_000 } });
      expect(res.status, res.body).toBe(200);
      const id = (JSON.parse(res.body) as { job: { id: string } }).job.id;
      expect((await rm.getJob(id))?.data).toEqual({ name: "ghost" });
      expect(await rm.getJobCounts()).toEqual({ ...before, delayed: (before.delayed ?? 0) + 1 });
      // the same delayed job in the browser: the unsafe board offers its actions, the dashboard's board none
      const actions = async (base: string): Promise<string[]> => {
        await page.goto(`${base}/queues/queue/${encodeURIComponent(queueMenuName("space-rm"))}?status=delayed`);
        await page.getByText(/ghost/).first().waitFor({ timeout: 15_000 });
        const names = await page.getByRole("button").evaluateAll((els) => els.map((e) => (e.textContent ?? "").trim() || (e.getAttribute("aria-label") ?? "")));
        return names.filter((n) => /\b(retry|clean|promote|duplicate|delete|remove|pause|resume|empty|obliterate|add)\b/i.test(n));
      };
      expect(await actions(unsafeDash.url)).not.toEqual([]); // the control: with writes on, Bull Board shows them
      expect(await actions(dash?.url ?? "")).toEqual([]);
      await rm.remove(id);
    } finally {
      await rm.close();
      await unsafeDash.stop();
    }
  });

  it("the operator's walk in Chromium at 1400 and 390 px: overview, a tenant's page, a failed schedule, a blocked root, Bull Board and back; only GETs, only to the dashboard", async () => {
    const base = dash?.url ?? "";
    const ctx = await (browser as Browser).newContext({ viewport: { width: 1400, height: 900 } });
    const seen: { method: string; url: string }[] = [];
    ctx.on("request", (q) => seen.push({ method: q.method(), url: q.url() }));
    const p = await ctx.newPage();
    const shot = (name: string) => p.screenshot({ path: join(SHOTS, name), fullPage: true });
    const narrowFits = async (): Promise<void> => {
      expect(await p.evaluate(() => (globalThis as unknown as { document: { body: { scrollWidth: number } } }).document.body.scrollWidth)).toBeLessThanOrEqual(390);
    };
    try {
      // the creds ledger: a cred with an expiry, one with none, one revoked (before the failing schedule holds beta)
      const mint = async (args: string[]): Promise<{ publicKey: string; expiresAt?: string }> => {
        const res = await r.cotal(["space", "creds", "beta", ...args, "--json"], { env });
        expect(res.code, res.stderr).toBe(0);
        return JSON.parse(res.stdout) as { publicKey: string; expiresAt?: string };
      };
      const app = await mint(["--user", "app", "--expires", "2h"]);
      const ci = await mint(["--user", "ci", "--admin"]);
      const gone = await mint(["--user", "gone", "--expires", "30d"]);
      const revoked = await r.cotal(["space", "revoke", "beta", "--user", "gone"], { env });
      expect(revoked.code, revoked.stderr).toBe(0);
      const expires = app.expiresAt;
      expect(expires).toMatch(/^\d{4}-.*Z$/);

      // a schedule whose directory became a file: its runs fail (the worker of the first cell runs them)
      const out = join(r.root, "..", "bk-beta");
      mkdirSync(out, { recursive: true });
      const sched = await r.cotal(["space", "backup", "beta", "--queue", "--every", "2s", "--keep", "1", "--out", out], { env });
      expect(sched.code, sched.stderr).toBe(0);
      // moved away in one step: the first run may be writing into it already (rmdir would race it)
      renameSync(out, `${out}.moved`);
      writeFileSync(out, "not a directory");

      // the overview: clean in green; the tenant's row links to its own page
      await p.goto(`${base}/tenants?refresh=0`);
      expect(await p.locator("#root-state").textContent()).toBe("clean");
      expect(await colorOf(p.locator("#root-state"))).toBe("rgb(0, 119, 0)");
      await p.locator('#spaces tr[data-space="beta"] td.name a').click();
      await p.waitForURL(/\/tenants\/beta\?refresh=0$/);
      await until("the failed scheduled run on beta's page", async () => {
        await p.reload();
        return (await p.locator("#backups .last-run-failed").count()) > 0;
      }, 20_000, 300);
      expect(await p.locator("#space-state").textContent()).toBe("active");
      expect(await p.locator('#usage tr[data-field="streams"] td').nth(1).textContent()).toBe("3"); // the template: one stream, two buckets
      expect(await p.locator('#usage tr[data-field="conns"] td').nth(2).textContent()).toMatch(/^\d+$/);
      expect(await p.locator("#connections").textContent()).toMatch(/^\d+ of \d+$/);
      expect(await p.locator("#streams tr[data-stream]").evaluateAll((rows) => rows.map((x) => x.getAttribute("data-stream")))).toEqual(["KV_cotal_presence_beta", "KV_cotal_state_beta", "cotal_events_beta"]);
      expect(await p.locator('#streams tr[data-stream="KV_cotal_state_beta"] td').nth(2).textContent()).toMatch(/^\d+(\.\d)? (B|KiB)$/);
      // the ledger's rows: user, key (short), issued, expires (flagged), role, permissions, state, file
      const cred = (key: string) => p.locator(`#creds tr[data-key="${key}"]`);
      const cells = async (key: string) => (await cred(key).locator("td").allTextContents()).map((t) => t.trim());
      const [, appKey, , appExpires, appRole, appPerms, appState, appFile] = await cells(app.publicKey);
      expect(appKey).toBe(`${app.publicKey.slice(0, 8)}…${app.publicKey.slice(-8)}`);
      expect(appExpires).toBe(`${expires} expires soon`); // two hours: within the week
      expect([appRole, appState]).toEqual(["user", "active"]);
      expect(appPerms).toMatch(/^user: no stream admin; pub all subjects; sub all subjects$/);
      expect(appFile).toMatch(/\/users\/app\.creds$/);
      expect(await cred(ci.publicKey).getAttribute("data-expiry")).toBe("never");
      expect((await cells(ci.publicKey)).slice(3, 5)).toEqual(["never: NO EXPIRY", "admin"]);
      expect(await colorOf(cred(ci.publicKey).locator("td.expiry"))).toBe("rgb(170, 68, 0)");
      expect(await cred(gone.publicKey).getAttribute("data-state")).toBe("revoked");
      expect((await cells(gone.publicKey))[6]).toMatch(/^revoked at \d{4}-\S+Z$/);
      expect(await colorOf(cred(gone.publicKey).locator("td.cred-state"))).toBe("rgb(204, 0, 0)");
      expect(await cred(app.publicKey).locator("td.cred-state").textContent()).toBe("active"); // the control: not every row is revoked
      expect(await p.locator("#ledger-summary").textContent()).toMatch(/cred\(s\): \d+ active, 1 revoked/);
      const backups = (await p.locator("#backups").textContent()) ?? "";
      // which [io] depends on where the run was when its directory went (the first run starts at once)
      expect(backups).toMatch(/last run FAILED \d{4}-\S+: \[io\] [^\n]*bk-beta[^\n]*next: /);
      expect(backups).not.toContain("none recorded");
      expect(await p.locator("#touching #nothing-holds").count()).toBe(1);
      expect(await p.content()).not.toMatch(/S[OAUNCPX][A-Z2-7]{55}/); // creds shown, never a seed
      await shot("tenant-1400.png");
      const unsched = await r.cotal(["jobs", "unschedule", "beta"], { env });
      expect(unsched.code, unsched.stderr).toBe(0);

      // the reload: on by default (every 5 s; with ?refresh=2 the browser reloads by itself), off by its toggle
      expect(await p.locator('meta[http-equiv="refresh"]').count()).toBe(0);
      await p.goto(`${base}/tenants/beta`);
      expect(await p.locator('meta[http-equiv="refresh"]').getAttribute("content")).toBe("5");
      await p.locator("#refresh-off").click();
      await p.waitForURL(/\/tenants\/beta\?refresh=0$/);
      expect(await p.locator('meta[http-equiv="refresh"]').count()).toBe(0);
      await p.goto(`${base}/tenants?refresh=2`);
      const readAt = await p.locator("h1 + p.muted").textContent();
      await p.waitForEvent("load", { timeout: 5_000 });
      expect(await p.locator("h1 + p.muted").textContent()).not.toBe(readAt);

      // a blocked root: a quiesce of gamma whose backup died; red with the core's next, gamma held
      const dead = spawnSync("true").pid;
      // written whole (rename), so the worker and the page never read half an entry
      writeFileSync(`${r.layout.journalFile}.tmp`, JSON.stringify({ op: "quiesce", space: "gamma", purpose: "backup", out: join(r.root, "..", "bk-gamma"), attemptId: "dash-walk", owner: { pid: dead, host: hostname() }, startedAt: new Date().toISOString(), stage: "journaled" }));
      renameSync(`${r.layout.journalFile}.tmp`, r.layout.journalFile);
      try {
        await p.goto(`${base}/tenants?refresh=0`);
        expect(await p.locator("#root-state").textContent()).toBe("BLOCKED");
        expect(await colorOf(p.locator("#root-state"))).toBe("rgb(204, 0, 0)");
        expect(await p.locator("#next").textContent()).toMatch(/^next: cotal --root \S+ up {3}# lifts the quiesce/);
        expect(await p.locator('#spaces tr[data-space="gamma"] .state').textContent()).toBe("quiesced");
        expect(await p.locator("#held").textContent()).toBe("held: gamma quiesced");
        await shot("blocked-1400.png");
        await p.locator('#spaces tr[data-space="gamma"] td.name a').click();
        await p.waitForURL(/\/tenants\/gamma/);
        const holds = p.locator("#touching .fact");
        expect(await holds.allTextContents()).toEqual([
          expect.stringMatching(/^journal: quiesce of space gamma by online backup dash-walk \(journaled\) since .*; its owner \(pid \d+\) is gone$/),
          expect.stringMatching(/^quiesced \(journal, journaled, pid \d+ dead\): its clients are refused until the lift\s*next: cotal --root \S+ up {3}# lifts the quiesce/),
        ]);
        await shot("blocked-tenant-1400.png");
        await p.setViewportSize({ width: 390, height: 844 });
        await narrowFits();
        await shot("blocked-tenant-390.png");
        await p.goto(`${base}/tenants?refresh=0`);
        await narrowFits();
        await shot("blocked-390.png");
      } finally {
        rmSync(r.layout.journalFile, { force: true });
      }
      await p.goto(`${base}/tenants/beta?refresh=0`);
      await narrowFits();
      await shot("tenant-390.png");
      await p.goto(`${base}/tenants/no-such-space`);
      expect(await p.locator("#not-found").textContent()).toBe("no space no-such-space on this root");
      await p.locator("#back").click();
      await p.waitForURL(/\/tenants$/);

      // Bull Board: queues by verb and root, the failed runs without a stack, and its link back
      await p.setViewportSize({ width: 1400, height: 900 });
      await p.goto(`${base}/queues`);
      await p.getByText(`space backup (root ${r.root})`).first().waitFor({ timeout: 15_000 });
      const backupQueue = queueMenuName("space-backup");
      // from the tenants page's queue row to that queue's failed jobs on the board
      await p.goto(`${base}/tenants?refresh=0`);
      await p.locator('#queues tr[data-queue="space-backup"] a').click();
      await p.waitForURL(/\/queues\/queue\/space%20backup\?status=failed$/);
      expect(await p.locator("h1").first().textContent()).toBe(`space backup (root ${r.root})`);
      await p.getByText(/\[io\] .*bk-beta/).first().waitFor({ timeout: 15_000 });
      expect(await p.locator("body").innerText()).not.toMatch(/\n\s*at \S+.*:\d+:\d+/);
      const api = (await (await fetch(`${base}/queues/api/queues?activeQueue=${encodeURIComponent(backupQueue)}&status=failed`)).json()) as { queues: { name: string; jobs: { failedReason?: string; stacktrace: string[] }[] }[] };
      const failedJobs = api.queues.find((q) => q.name === backupQueue)?.jobs ?? [];
      expect(failedJobs.length).toBeGreaterThan(0); // the control: the failures are there, with their reason
      expect(failedJobs.map((j) => [Boolean(j.failedReason), j.stacktrace])).toEqual(failedJobs.map(() => [true, []]));
      await shot("bull-board-1400.png");
      await p.locator('header button[aria-haspopup="menu"]').click();
      await p.getByRole("menuitem", { name: "Tenants (cotal)" }).click();
      await p.waitForURL(/\/tenants$/);
    } finally {
      await ctx.close();
    }
    // what the browser asked for: reads only, from this dashboard only (its pages, Bull Board's assets and API)
    const origin = new URL(base).origin;
    const network = seen.filter((q) => !q.url.startsWith("data:"));
    expect(network.filter((q) => new URL(q.url).origin !== origin)).toEqual([]);
    expect(network.filter((q) => q.method !== "GET" && q.method !== "HEAD")).toEqual([]);
    for (const want of [/\/tenants\?refresh=0$/, /\/tenants\/beta\?refresh=0$/, /\/tenants\/gamma/, /\/queues\/api\/queues/, /\/queues\/static\/js\//]) expect(network.some((q) => want.test(q.url)), String(want)).toBe(true);
  });

  it("a tenant under a standing space rm shows removing, under a quiesce quiesced, on the page and in cotal space list", async () => {
    const add = await r.cotal(["space", "add", "delta"], { env });
    expect(add.code, add.stderr).toBe(0);
    // positive control: it is active before the removal stands
    expect(await listedStates()).toMatchObject({ alpha: "active", delta: "active" });
    const cut = await r.cotal(["space", "rm", "delta", "--yes"], { env: { ...env, COTAL_FAILPOINT: "rm-journaled:exit" } });
    expect(cut.code, cut.stderr).toBe(FAILPOINT_EXIT_CODE);
    expect(await listedStates()).toMatchObject({ alpha: "active", delta: "removing" });
    await expectShown("delta", "removing");
    const human = await r.cotal(["space", "list"], { env });
    expect(human.stdout).toMatch(/^ {2}delta +removing /m);
    const rerun = await r.cotal(["space", "rm", "delta", "--yes"], { env });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(await listedStates()).not.toHaveProperty("delta");

    // a quiesce journal entry by hand, its owner dead: what a killed online backup leaves
    const dead = spawnSync("true").pid;
    const entry = { op: "quiesce", space: "alpha", purpose: "backup", out: join(r.root, "..", "bk-alpha"), attemptId: "dash-cell", owner: { pid: dead, host: hostname() }, startedAt: new Date().toISOString(), stage: "journaled" };
    writeFileSync(r.layout.journalFile, JSON.stringify(entry));
    try {
      expect(await listedStates()).toMatchObject({ alpha: "quiesced", beta: "active" });
      await expectShown("alpha", "quiesced");
    } finally {
      rmSync(r.layout.journalFile, { force: true });
    }
    expect(await listedStates()).toMatchObject({ alpha: "active" }); // the entry alone made it quiesced
  });

  it("with Redis down the tenant page still renders and its queues section says Redis is unreachable", async () => {
    await page.goto(`${dash?.url}/tenants?refresh=0`);
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
    expect(res.stderr).toMatch(/next: cotal (--root \S+ )?dashboard --host 127\.0\.0\.1/);
  });

  it("refuses a port already taken with exit 6 [port-in-use]", async () => {
    const blocker = createServer();
    await new Promise<void>((ok) => blocker.listen(0, "127.0.0.1", ok));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const res = await r.cotal(["dashboard", "--port", String(port)], { env, timeoutMs: 15_000 });
      expect(res.code, res.stderr).toBe(6);
      expect(res.stderr).toMatch(/\[port-in-use\]/);
      expect(res.stderr).toMatch(new RegExp(`next: cotal (--root \\S+ )?dashboard --port ${port + 1}`));
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
