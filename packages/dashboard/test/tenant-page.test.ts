import { describe, expect, it } from "vitest";
import type { TenantPageData } from "../src/tenant-data.js";
import { renderTenantPage } from "../src/tenant-page.js";
import { parseSpaceQuery } from "../src/paging.js";

const EVIL = `<img src=x onerror="alert(1)">`;

function data(over: Partial<TenantPageData> = {}): TenantPageData {
  return {
    readAt: "2026-01-01T00:00:00.000Z",
    root: `/tmp/${EVIL}`,
    state: "clean",
    why: `why ${EVIL}`,
    broker: { running: true, pid: 7, url: "nats://127.0.0.1:4222", serverVersion: "2.12.0", startedAt: "t0", staleRuntime: false, strays: [] },
    generation: 4,
    appliedGeneration: 3,
    revision: 9,
    inventoryError: null,
    pending: { generation: 5, op: "add", adds: ["delta"], removes: [], writer: `pid@${EVIL}`, leaseId: "l", claimedAt: "t1" },
    lock: { pid: 42, host: EVIL, purpose: "cotal space add delta", startedAt: "t5", status: "alive" },
    journal: { op: "space-rm", space: "beta", startedAt: "t2" },
    journalError: null,
    provisioningOwed: [],
    quiesced: [],
    corrupt: [{ path: "/r/auth/x.json", reason: EVIL }],
    spaces: [
      { name: "alpha", state: "active", publicKey: "AK", inConfig: true, inInventory: true, createdAt: "t", quota: { disk: 64 * 1024 ** 2, mem: -1, streams: 16, consumers: 256, conns: 128, subs: 10_000, payload: 1024 ** 2, leafnodes: 0 }, lastBackup: { artifact: `/b/${EVIL}`, bytes: 2048, finishedAt: "t3" }, backupSchedule: { every: "0 3 * * *", next: "t4" } },
      { name: "delta", state: "pending-add", publicKey: null, inConfig: false, inInventory: false, createdAt: null, quota: null, lastBackup: null, backupSchedule: null },
    ],
    queues: { reachable: false, redis: "redis://127.0.0.1:6379", error: `cannot reach Redis ${EVIL}` },
    ...over,
  };
}

describe("tenant page", () => {
  it("a clean root with only active spaces is green and names no held space (the control of the held rule)", () => {
    const base = data().spaces[0];
    if (!base) throw new Error("fixture has no space");
    const page = renderTenantPage(data({ pending: null, lock: null, journal: null, spaces: [base] }));
    expect(page).toMatch(/id="root-state" class="state state-clean sev-ok">clean</);
    expect(page).not.toContain('id="held"');
    expect(page).toMatch(/id="pending">none</);
  });

  it("a blocked root is red with the core's next; the pending claim, a dead lock holder and the journal are red", () => {
    const page = renderTenantPage(data({ state: "BLOCKED", why: "a space rm of beta stands", next: "cotal --root /r space rm beta --yes", lock: { pid: 42, host: "h", purpose: "cotal space rm beta", startedAt: "t5", status: "dead" } }));
    expect(page).toMatch(/id="root-state" class="state state-BLOCKED sev-block">BLOCKED</);
    expect(page).toMatch(/<div class="next" id="next">next: <code>cotal --root \/r space rm beta --yes<\/code><\/div>/);
    expect(page).toMatch(/class="sev-block" id="pending">add \+\[delta\]/);
    expect(page).toMatch(/class="sev-block" id="lock">pid 42 on h \(cotal space rm beta, dead/);
    expect(page).toMatch(/class="sev-block" id="journal">space-rm beta/);
    // a live holder is busy, not blocked: amber
    expect(renderTenantPage(data())).toMatch(/class="sev-warn" id="lock">pid 42/);
  });

  it("a quiesced tenant is listed with its next; each row links to the tenant's own page", () => {
    const page = renderTenantPage(data({ quiesced: [{ space: "alpha", source: "jwt", revokeAllBefore: 1, next: "cotal --root /r up   # lifts it" }] }));
    expect(page).toMatch(/id="quiesced"><div class="sev-warn">alpha \(jwt\)<\/div><div class="next">next: <code>cotal --root \/r up   # lifts it<\/code>/);
    expect(page).toContain('<td class="name"><a href="tenants/alpha">alpha</a></td>');
  });

  it("reloads every 5 s by default and not with ?refresh=0; the filter form and links keep it off", () => {
    expect(renderTenantPage(data())).toContain('<meta http-equiv="refresh" content="5">');
    const off = renderTenantPage(data(), parseSpaceQuery({ refresh: "0" }));
    expect(off).not.toContain("http-equiv");
    expect(off).toContain('<input type="hidden" name="refresh" value="0">');
    expect(off).toContain('<a href="tenants/alpha?refresh=0">alpha</a>');
    expect(off).toContain('<a href="tenants" id="refresh-on">turn on</a>');
    expect(renderTenantPage(data())).toContain('<a href="tenants?refresh=0" id="refresh-off">stop</a>');
  });

  it("escapes every value that reaches it (root, reasons, lock holder, artifacts, errors)", () => {
    const page = renderTenantPage(data());
    expect(page).not.toContain("<img");
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(page).not.toMatch(/<script/i);
  });

  it("shows generation and appliedGeneration, the pending claim, the lock holder, the journal and each space's quota", () => {
    const page = renderTenantPage(data());
    expect(page).toMatch(/id="generation">4</);
    expect(page).toMatch(/id="applied-generation" class="sev-block">3</); // behind the committed generation: red
    expect(page).toMatch(/id="pending">add \+\[delta\] -\[\] → generation 5/);
    expect(page).toMatch(/id="lock">pid 42 on/);
    expect(page).toMatch(/class="sev-block" id="journal">space-rm beta since t2: re-run the removal</);
    expect(page).toContain('data-space="delta"');
    expect(page).toMatch(/disk 64 MiB · mem ∞ · streams 16/);
    expect(page).toMatch(/scheduled 0 3 \* \* \*, next t4/);
  });

  it("marks a removing or quiesced space with its state, not active, and not in green", () => {
    const base = data().spaces[0];
    if (!base) throw new Error("fixture has no space");
    const page = renderTenantPage(data({ spaces: [{ ...base, name: "beta", state: "removing" }, { ...base, name: "gamma", state: "quiesced" }] }));
    expect(page).toMatch(/data-space="beta">\s*<td class="name"><a href="tenants\/beta">beta<\/a><\/td><td class="state state-removing sev-warn">removing<\/td>/);
    expect(page).toMatch(/data-space="gamma">\s*<td class="name"><a href="tenants\/gamma">gamma<\/a><\/td><td class="state state-quiesced sev-warn">quiesced<\/td>/);
    expect(page).toMatch(/\.sev-warn\{color:#a40\}|\.warn,\.sev-warn\{color:#a40\}/);
    // the root reads clean, but not in green: the held tenants are named beside it
    expect(page).toMatch(/id="root-state" class="state state-clean sev-warn">clean, 2 spaces held</);
    expect(page).toMatch(/id="held" class="sev-warn">held: <a href="tenants\/beta">beta<\/a> removing, <a href="tenants\/gamma">gamma<\/a> quiesced/);
  });

  it("says Redis is unreachable instead of the queue table, and shows the queue table when it answers", () => {
    expect(renderTenantPage(data())).toContain('id="redis-unreachable"');
    const up = renderTenantPage(data({ queues: { reachable: true, redis: "redis://127.0.0.1:6379", queues: [{ type: "space-add", queue: "space-add.root_x", processed: true, counts: { waiting: 3, active: 1, delayed: 0, prioritized: 0, "waiting-children": 0, completed: 0, failed: 0 }, workers: 2, failed: [] }] } }));
    expect(up).not.toContain('id="redis-unreachable"');
    expect(up).toMatch(/data-queue="space-add"><td><a href="queues\/queue\/space%20add">space-add<\/a><\/td><td>2<\/td><td>3<\/td><td>1<\/td>/);
    // a queue with failures links to Bull Board's failed tab of that queue, by its readable name
    const failing = renderTenantPage(data({ queues: { reachable: true, redis: "r", queues: [{ type: "space-backup", queue: "space-backup.root_x", processed: true, counts: { waiting: 0, active: 0, delayed: 0, prioritized: 0, "waiting-children": 0, completed: 0, failed: 2 }, workers: 1, failed: [] }] } }));
    expect(failing).toContain('<a href="queues/queue/space%20backup?status=failed">space-backup</a>');
  });
});
