import { describe, expect, it } from "vitest";
import type { TenantPageData } from "../src/tenant-data.js";
import { renderTenantPage } from "../src/tenant-page.js";

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
  it("escapes every value that reaches it (root, reasons, lock holder, artifacts, errors)", () => {
    const page = renderTenantPage(data());
    expect(page).not.toContain("<img");
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(page).not.toMatch(/<script/i);
  });

  it("shows generation and appliedGeneration, the pending claim, the lock holder, the journal and each space's quota", () => {
    const page = renderTenantPage(data());
    expect(page).toMatch(/id="generation">4</);
    expect(page).toMatch(/id="applied-generation">3</);
    expect(page).toMatch(/id="pending">add \+\[delta\] -\[\] → generation 5/);
    expect(page).toMatch(/id="lock">pid 42 on/);
    expect(page).toMatch(/id="journal">space-rm beta since t2 — next: cotal space rm beta --yes/);
    expect(page).toContain('data-space="delta"');
    expect(page).toMatch(/disk 64 MiB · mem ∞ · streams 16/);
    expect(page).toMatch(/scheduled 0 3 \* \* \*, next t4/);
  });

  it("marks a removing or quiesced space with its state, not active, and not in green", () => {
    const base = data().spaces[0];
    if (!base) throw new Error("fixture has no space");
    const page = renderTenantPage(data({ spaces: [{ ...base, name: "beta", state: "removing" }, { ...base, name: "gamma", state: "quiesced" }] }));
    expect(page).toMatch(/data-space="beta">\s*<td class="name">beta<\/td><td class="state state-removing">removing<\/td>/);
    expect(page).toMatch(/data-space="gamma">\s*<td class="name">gamma<\/td><td class="state state-quiesced">quiesced<\/td>/);
    expect(page).toMatch(/\.state-removing,\.state-quiesced\{color:#a40/);
  });

  it("says Redis is unreachable instead of the queue table, and shows the queue table when it answers", () => {
    expect(renderTenantPage(data())).toContain('id="redis-unreachable"');
    const up = renderTenantPage(data({ queues: { reachable: true, redis: "redis://127.0.0.1:6379", queues: [{ type: "space-add", queue: "space-add.root_x", processed: true, counts: { waiting: 3, active: 1, delayed: 0, prioritized: 0, "waiting-children": 0, completed: 0, failed: 0 }, workers: 2, failed: [] }] } }));
    expect(up).not.toContain('id="redis-unreachable"');
    expect(up).toMatch(/data-queue="space-add"><td>space-add<\/td><td>2<\/td><td>3<\/td><td>1<\/td>/);
  });
});
