import { describe, expect, it } from "vitest";
import { renderTenantDetail, usageCell } from "../src/detail-page.js";
import { filesOutsideLedger, type TenantDetail } from "../src/tenant-detail.js";

const EVIL = `<img src=x onerror="alert(1)">`;
const failedRun = { at: "t9", outcome: "failed" as const, jobId: "j", artifact: null, bytes: null, reason: "x", error: { code: "io", message: `/b/${EVIL} is not a directory`, next: "cotal --root /r space backup alpha --out /b.1 --every 2s --queue" } };

type User = Extract<TenantDetail["info"]["users"], { read: true }>["rows"][number];
const KEY = (c: string) => `U${c.repeat(55)}`;
const user = (name: string, c: string, over: Partial<User>): User => ({
  user: name, publicKey: KEY(c), keyShort: `U${c.repeat(7)}…${c.repeat(8)}`, iat: 0, issuedAt: "2030-01-01T00:00:00.000Z", admin: false, permissions: {},
  path: `/r/space.x/users/${name}.creds`, state: "active", source: "ledger", onDisk: true, expiry: "ok", expiresAt: "2030-03-01T00:00:00.000Z", permissionsSummary: "user: no stream admin; pub all subjects; sub all subjects", ...over,
});
const USERS: User[] = [
  user("app", "A", { expiresAt: "2030-01-01T02:00:00.000Z", expiry: "soon" }),
  user("ci", "C", { expiresAt: undefined, expiry: "never", admin: true, permissionsSummary: "admin: full JetStream API; pub all subjects; sub all subjects" }),
  user("bob", "B", { state: "revoked", revokedAt: "2030-01-01T01:00:00.000Z", onDisk: false }),
  user("old", "D", { state: "expired", expiry: "expired", expiresAt: "2029-01-02T00:00:00.000Z" }),
  user(`legacy${EVIL}`, "E", { source: "unknown (minted before the ledger)", expiresAt: undefined, expiry: "never" }),
];

function detail(over: Partial<TenantDetail> = {}): TenantDetail {
  return {
    readAt: "2030-01-01T00:00:00.000Z",
    info: {
      space: "alpha",
      root: `/r/${EVIL}`,
      state: "active",
      rootState: "clean",
      publicKey: "ACCOUNTKEY",
      createdAt: "t0",
      broker: { running: true, url: "nats://127.0.0.1:4222" },
      limits: [
        { field: "disk", limit: 64 * 1024 ** 2, used: 62 * 1024 ** 2, percent: 96.9 },
        { field: "mem", limit: -1, used: 0, percent: null },
        { field: "conns", limit: 128, used: 3, percent: 2.3 },
        { field: "payload", limit: 1024 ** 2, used: null, percent: null },
      ],
      usage: { read: true, readAt: "t1" },
      creds: [],
      users: { read: true, summary: "5 cred(s): 2 active, 1 revoked, 1 expired (1 minted before the ledger)", unreadable: 0, rows: USERS },
    },
    rootWhy: "generation 2, proven and committed",
    creds: [{ user: "sys.observer", kind: "sys-observer", path: "/r/space.x/sys.observer.creds", issuedAt: "2029-01-01T00:00:00.000Z", expiresAt: null, status: "valid" }],
    streams: [
      { name: "KV_cotal_state_alpha", kind: "kv", bytes: 2048 },
      { name: "cotal_events_alpha", kind: "stream", bytes: 1024 ** 2 },
    ],
    touching: [],
    jobs: { reachable: true, redis: "redis://127.0.0.1:6379", schedules: [{ space: "alpha", schedulerId: "s", cadence: "every 2s", out: "/b", keep: 2, next: "t10", lastRun: failedRun, lastSuccess: null }], failed: [1, 2, 3].map((i) => ({ id: `j${i}`, space: "alpha", reason: "[io] not a directory", attemptsMade: 1, failedAt: `t${i}`, type: "space-backup" as const })) },
    ...over,
  };
}

describe("a tenant's own page", () => {
  it("shows each quota field against its use, red from 90 %, unlimited and unread as words", () => {
    const page = renderTenantDetail(detail());
    expect(page).toMatch(/<tr data-field="disk" class="sev-block"><td>disk<\/td><td>62 MiB<\/td><td>64 MiB<\/td>\s*<td><span class="bar high"><span style="width:96.9%"><\/span><\/span> 96.9%<\/td>/);
    expect(page).toMatch(/<tr data-field="mem"><td>mem<\/td><td>0 B<\/td><td>unlimited<\/td>\s*<td><\/td>/);
    expect(page).toMatch(/<tr data-field="payload"><td>payload<\/td><td>—<\/td><td>1 MiB<\/td>/);
    expect(page).toMatch(/id="connections">3 of 128</);
    expect([usageCell("disk", null), usageCell("conns", -1), usageCell("subs", 7)]).toEqual(["—", "unlimited", "7"]);
  });

  it("says why usage was not read instead of zeros", () => {
    const page = renderTenantDetail(detail({ info: { ...detail().info, usage: { read: false, reason: "broker not running" }, limits: [{ field: "disk", limit: 10, used: null, percent: null }] } }));
    expect(page).toContain('<p class="warn" id="usage-not-read">usage: broker not running</p>');
    expect(page).toMatch(/<td>disk<\/td><td>—<\/td>/);
  });

  it("lists streams and KV buckets with their size, and the files the ledger does not name with minted and expiry", () => {
    const page = renderTenantDetail(detail());
    expect(page).toMatch(/data-stream="KV_cotal_state_alpha"><td class="mono">cotal_state_alpha<\/td><td>KV bucket<\/td><td>2 KiB<\/td>/);
    expect(page).toMatch(/data-stream="cotal_events_alpha"><td class="mono">cotal_events_alpha<\/td><td>stream<\/td><td>1 MiB<\/td>/);
    expect(page).toMatch(/<section id="creds-files">.*data-user="sys.observer"><td>sys.observer <span class="muted">\(\$SYS observer\)<\/span><\/td><td>2029-01-01T00:00:00.000Z<\/td><td>never<\/td>/s);
    expect(renderTenantDetail(detail({ creds: [] }))).not.toContain('id="creds-files"');
  });

  it("shows the creds ledger: key (short, whole in its title), issued, expiry flagged, role, permissions, revoked with when, file; unknown ones listed", () => {
    const page = renderTenantDetail(detail());
    const row = (key: string) => new RegExp(`<tr [^>]*data-key="${key}"[^>]*>(.*?)</tr>`, "s").exec(page)?.[1] ?? "";
    expect(page).toContain('id="ledger-summary">5 cred(s): 2 active, 1 revoked, 1 expired (1 minted before the ledger); as <code>cotal space users alpha</code>');
    expect(page).toMatch(/<tr data-user="app" data-key="UA{55}" data-state="active" data-expiry="soon" data-source="ledger">/);
    expect(row(KEY("A"))).toMatch(/<td class="mono" title="UA{55}">UAAAAAAA…AAAAAAAA<\/td><td>2030-01-01T00:00:00.000Z<\/td>\s*<td class="expiry sev-warn">2030-01-01T02:00:00.000Z <b>expires soon<\/b><\/td>\s*<td>user<\/td><td class="perms">user: no stream admin; pub all subjects; sub all subjects<\/td>\s*<td class="cred-state sev-ok">active<\/td>\s*<td class="mono">\/r\/space.x\/users\/app.creds<\/td>/);
    expect(row(KEY("C"))).toMatch(/<td class="expiry sev-warn">never: NO EXPIRY<\/td>\s*<td>admin<\/td><td class="perms">admin: full JetStream API/);
    expect(row(KEY("B"))).toMatch(/<td class="cred-state sev-block">revoked at 2030-01-01T01:00:00.000Z<\/td>\s*<td class="mono">\/r\/space.x\/users\/bob.creds <span class="muted">\(replaced or gone\)<\/span>/);
    expect(row(KEY("D"))).toMatch(/<td class="expiry sev-block">2029-01-02T00:00:00.000Z <b>EXPIRED<\/b><\/td>.*<td class="cred-state sev-block">expired<\/td>/s);
    expect(page).toMatch(/data-key="UE{55}" data-state="active" data-expiry="never" data-source="unknown">\s*<td>legacy&lt;img src=x onerror=&quot;alert\(1\)&quot;&gt; <span class="sev-warn unknown">unknown: minted before the ledger<\/span>/);
    expect(page).not.toMatch(/S[OAUNCPX][A-Z2-7]{55}/); // keys shown, never a seed
    const none = renderTenantDetail(detail({ info: { ...detail().info, users: { read: false, reason: "no account record on disk (kv-only)" } } }));
    expect(none).toContain('id="ledger-not-read">ledger: not read: no account record on disk (kv-only)<');
  });

  it("a failed scheduled backup shows the failure with its next, never 'none recorded'; repeated job failures are one line with a count", () => {
    const page = renderTenantDetail(detail());
    expect(page).toContain("last run FAILED t9: [io] /b/&lt;img");
    expect(page).toContain("next: <code>cotal --root /r space backup alpha --out /b.1 --every 2s --queue</code>");
    expect(page).not.toContain("none recorded");
    expect(page.match(/class="sev-block failed-job"/g)?.length).toBe(1);
    expect(page).toContain('FAILED <a href="../queues/queue/space%20backup?status=failed">space-backup</a> job ×3, last at t1 after 1 attempt(s): [io] not a directory');
  });

  it("names what holds it in its colour with its next, and the blocked root with the core's next", () => {
    const page = renderTenantDetail(detail({ info: { ...detail().info, state: "removing", rootState: "BLOCKED" }, rootNext: "cotal --root /r space rm alpha --yes", touching: [{ text: "journal: space-rm alpha since t", severity: "block" }, { text: "quiesced (jwt)", severity: "warn", next: "cotal --root /r up   # lifts it" }] }));
    expect(page).toMatch(/id="space-state" class="state state-removing sev-warn">removing</);
    expect(page).toMatch(/id="root-state" class="state sev-block">BLOCKED</);
    expect(page).toContain('<div class="next" id="next">next: <code>cotal --root /r space rm alpha --yes</code></div>');
    expect(page).toContain('<div class="fact"><span class="sev-block">journal: space-rm alpha since t</span></div>');
    expect(page).toContain('<span class="sev-warn">quiesced (jwt)</span><div class="next">next: <code>cotal --root /r up   # lifts it</code></div>');
    expect(page).not.toContain('id="nothing-holds"');
    // the control: nothing standing says so, in green
    expect(renderTenantDetail(detail())).toContain('id="nothing-holds"');
  });

  it("escapes every value, links back to the overview and keeps the reload off when asked", () => {
    const page = renderTenantDetail(detail(), 0);
    expect(page).not.toContain("<img");
    expect(page).toContain('<a href="../tenants?refresh=0" id="back">');
    expect(page).not.toContain("http-equiv");
    expect(renderTenantDetail(detail())).toContain('<meta http-equiv="refresh" content="5">');
    expect(renderTenantDetail(detail({ jobs: { reachable: false, redis: "r", error: "down" } }))).toContain('id="redis-unreachable">Redis is unreachable: down<');
  });

  it("the files section keeps only what the ledger does not show: the $SYS observer, or every file when the ledger is not read", () => {
    const creds = [
      { user: "app", kind: "user" as const, path: "/r/space.x/users/app.creds" },
      { user: "sys.observer", kind: "sys-observer" as const, path: "/r/space.x/sys.observer.creds" },
    ];
    expect(filesOutsideLedger({ creds, users: detail().info.users })).toEqual([creds[1]]);
    expect(filesOutsideLedger({ creds, users: { read: false, reason: "kv-only" } })).toEqual(creds);
  });
});
