import { describe, expect, it } from "vitest";
import { pageHref, pageOfSpaces, parseRefresh, parseSpaceQuery } from "../src/paging.js";
import type { DashboardSpace } from "../src/tenant-data.js";
import { renderTenantPage } from "../src/tenant-page.js";
import type { TenantPageData } from "../src/tenant-data.js";

function space(name: string, state = "active"): DashboardSpace {
  return { name, state, publicKey: null, inConfig: true, inInventory: true, createdAt: null, quota: null, lastBackup: null, backupSchedule: null } as DashboardSpace;
}

const TEN_THOUSAND = Array.from({ length: 10_000 }, (_, i) => space(`t${String(i).padStart(5, "0")}`, i % 1000 === 7 ? "pending-add" : "active"));

describe("the tenant page's paging", () => {
  it("reads a query string safely: junk falls back to page 1 of 100, never an error", () => {
    expect(parseSpaceQuery({})).toEqual({ page: 1, size: 100, q: "", state: undefined, refresh: 5 });
    expect(parseSpaceQuery({ page: "-3", size: "7", q: "  ab ", state: "", refresh: "1" })).toEqual({ page: 1, size: 100, q: "ab", state: undefined, refresh: 5 });
    expect(parseSpaceQuery({ page: ["4", "9"], size: "500", state: "active", refresh: "0" })).toEqual({ page: 4, size: 500, q: "", state: "active", refresh: 0 });
    expect(parseSpaceQuery({ page: "1e9999" }).page).toBe(1);
  });

  it("reads ?refresh=: 0 or off turns the reload off, 2-600 s is kept, junk is the default", () => {
    for (const [v, want] of [["0", 0], ["off", 0], ["OFF", 0], ["2", 2], ["600", 600], ["601", 5], ["1", 5], ["x", 5], ["", 5], ["1e1", 5], [undefined, 5]] as const) expect(parseRefresh({ refresh: v }), String(v)).toBe(want);
  });

  it("links keep a turned-off reload, and leave the default out", () => {
    expect(pageHref(parseSpaceQuery({ refresh: "0", q: "a" }), { page: 2 })).toBe("tenants?q=a&page=2&refresh=0");
    expect(pageHref(parseSpaceQuery({ refresh: "0" }), { refresh: 5 })).toBe("tenants");
  });

  it("10,000 spaces render one slice: 100 rows, the counts per state, the page clamped to the last", () => {
    const p = pageOfSpaces(TEN_THOUSAND, parseSpaceQuery({ page: "3" }));
    expect(p.rows.map((s) => s.name)).toEqual(TEN_THOUSAND.slice(200, 300).map((s) => s.name));
    expect([p.total, p.matched, p.page, p.pages]).toEqual([10_000, 10_000, 3, 100]);
    expect(p.byState).toEqual([["active", 9_990], ["pending-add", 10]]);
    expect(pageOfSpaces(TEN_THOUSAND, parseSpaceQuery({ page: "999" })).page).toBe(100);
  });

  it("filters by name substring and by state, and links keep the filter", () => {
    const q = parseSpaceQuery({ state: "pending-add", q: "T0" });
    const p = pageOfSpaces(TEN_THOUSAND, q);
    expect(p.rows.map((s) => s.name)).toEqual(["t00007", "t01007", "t02007", "t03007", "t04007", "t05007", "t06007", "t07007", "t08007", "t09007"]);
    expect(p.matched).toBe(10);
    expect(pageHref(q, { page: 2 })).toBe("tenants?q=T0&state=pending-add&page=2");
    expect(pageHref(parseSpaceQuery({}), {})).toBe("tenants");
  });

  it("the rendered page at 10,000 spaces holds 100 rows and a next link, and escapes the filter it echoes", () => {
    const d = { readAt: "t", root: "/r", state: "clean", why: "", broker: { running: false, staleRuntime: false, strays: [] }, generation: 1, appliedGeneration: 1, revision: 1, inventoryError: null, pending: null, lock: null, journal: null, journalError: null, provisioningOwed: [], quiesced: [], corrupt: [], spaces: TEN_THOUSAND, queues: { reachable: false, redis: "r", error: "e" } } as unknown as TenantPageData;
    const page = renderTenantPage(d, parseSpaceQuery({ q: `"><script>` }));
    expect(page).not.toContain("<script>");
    expect(page).toContain('value="&quot;&gt;&lt;script&gt;"');
    expect(page).toContain('id="no-match"');
    const first = renderTenantPage(d);
    expect(first.match(/<tr data-space=/g)?.length).toBe(100);
    expect(first).toContain('<a rel="next" href="tenants?page=2">next</a>');
    expect(first).toContain("showing 1–100 of 10000, page 1 of 100");
  });
});
