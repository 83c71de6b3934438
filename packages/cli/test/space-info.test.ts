import { describe, expect, it } from "vitest";
import { cell, renderSpaceInfo, type SpaceInfoDocument } from "../src/commands/space-info.js";

const MiB = 1024 ** 2;

type User = Extract<SpaceInfoDocument["users"], { read: true }>["rows"][number];
const KEY = `U${"X".repeat(55)}`;
const APP: User = { user: "app", publicKey: KEY, keyShort: "UXXXXXXX…XXXXXXXX", iat: 0, issuedAt: "2026-01-01T00:00:00.000Z", admin: false, permissions: {}, path: "/r/.cotal/space.616c706861/users/app.creds", state: "active", source: "ledger", onDisk: true, expiry: "never", permissionsSummary: "user: no stream admin; pub all subjects; sub all subjects" };
const BOB: User = { ...APP, user: "bob", admin: true, path: "/tmp/bob.creds", expiresAt: "2026-01-03T00:00:00.000Z", expiry: "soon", state: "revoked", revokedAt: "2026-01-02T00:00:00.000Z", onDisk: false, permissionsSummary: "admin: full JetStream API; pub all subjects; sub all subjects" };
const OLD: User = { ...APP, user: "old", path: "/r/.cotal/space.616c706861/users/old.creds", expiresAt: "2025-01-01T00:00:00.000Z", expiry: "expired", source: "unknown (minted before the ledger)" };

function doc(over: Partial<SpaceInfoDocument> = {}): SpaceInfoDocument {
  return {
    space: "alpha",
    root: "/r/.cotal",
    state: "active",
    rootState: "clean",
    publicKey: "AALPHA",
    createdAt: "2026-01-01T00:00:00.000Z",
    broker: { running: true, url: "nats://127.0.0.1:4222" },
    limits: [
      { field: "disk", limit: 8 * MiB, used: 2 * MiB, percent: 25 },
      { field: "consumers", limit: -1, used: 7, percent: null },
      { field: "payload", limit: MiB, used: null, percent: null },
    ],
    usage: { read: true, readAt: "2026-01-01T00:00:01.000Z" },
    creds: [
      { user: "app", path: "/r/.cotal/space.616c706861/users/app.creds", kind: "user" },
      { user: "sys.observer", path: "/r/.cotal/space.616c706861/sys.observer.creds", kind: "sys-observer" },
    ],
    users: { read: true, summary: "3 cred(s): 1 active, 1 revoked, 0 expired (1 minted before the ledger)", unreadable: 0, rows: [APP, BOB, OLD] },
    backups: { reachable: true, redis: "redis://127.0.0.1:6379", schedules: [] },
    ...over,
  };
}

describe("space info: the human page", () => {
  it("cells: bytes in binary units, -1 unlimited, unknown a dash", () => {
    expect(cell("disk", 8 * MiB)).toBe("8 MiB");
    expect(cell("conns", -1)).toBe("unlimited");
    expect(cell("mem", null)).toBe("-");
    expect(cell("streams", 3)).toBe("3");
  });

  it("an aligned limits table with percentages, the creds files and the schedule state", () => {
    const lines = renderSpaceInfo(doc());
    expect(lines[0]).toBe("Space information for alpha");
    expect(lines).toContain("  Account:  AALPHA");
    const table = lines.slice(lines.indexOf("Limits and usage:") + 1, lines.indexOf("Limits and usage:") + 5);
    expect(table).toEqual([
      "             Used   Limit      Use",
      "  disk       2 MiB  8 MiB      25.0%",
      "  consumers  7      unlimited",
      "  payload    -      1 MiB",
    ]);
    expect(lines.at(-1)).toBe("  no backup schedule");
  });

  it("the creds ledger: short key, issued, expiry flagged, role, state with when revoked, permissions, file; unknown creds said so; the observer apart", () => {
    const lines = renderSpaceInfo(doc());
    const at = lines.indexOf("Creds (the ledger, as cotal space users alpha lists it):");
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe("  3 cred(s): 1 active, 1 revoked, 0 expired (1 minted before the ledger)");
    expect(lines[at + 2]).toMatch(/^ {2}USER +KEY +ISSUED +EXPIRES +ROLE +STATE +PERMISSIONS +FILE$/);
    expect(lines[at + 3]).toMatch(/^ {2}app +UXXXXXXX…XXXXXXXX +2026-01-01T00:00:00.000Z +never \(NO EXPIRY\) +user +active +user: no stream admin; pub all subjects; sub all subjects +\/r\/.cotal\/space.616c706861\/users\/app.creds$/);
    expect(lines[at + 4]).toMatch(/^ {2}bob .* 2026-01-03T00:00:00.000Z \(expires soon\) +admin +revoked \(2026-01-02T00:00:00.000Z\) +admin: full JetStream API.* \/tmp\/bob.creds \(replaced or gone\)$/);
    expect(lines[at + 5]).toMatch(/^ {2}old .* 2025-01-01T00:00:00.000Z \(EXPIRED\) +user +active, unknown \(minted before the ledger\) /);
    // app.creds is the ledger's row; the observer is not in the ledger, so it is listed apart
    expect(lines.slice(at + 6, at + 9)).toEqual(["", "Other creds files:", "  sys.observer  /r/.cotal/space.616c706861/sys.observer.creds"]);
    expect(lines.join("\n")).not.toMatch(/S[OAUNCPX][A-Z2-7]{55}/);
  });

  it("no ledger (no record on disk) is a line, not a failure; an empty one says nothing was minted", () => {
    expect(renderSpaceInfo(doc({ users: { read: false, reason: "no account record on disk (kv-only)" } }))).toContain("  ledger: not read: no account record on disk (kv-only)");
    expect(renderSpaceInfo(doc({ users: { read: true, summary: "0 cred(s)", unreadable: 0, rows: [] } }))).toContain("  no cred minted yet");
  });

  it("a stopped broker says why usage is absent; unreachable Redis is a line, not a failure", () => {
    const lines = renderSpaceInfo(doc({ broker: { running: false, url: null }, usage: { read: false, reason: "broker not running" }, backups: { reachable: false, redis: "redis://127.0.0.1:1", error: "ECONNREFUSED" } }));
    expect(lines).toContain("  Broker:   not running");
    expect(lines).toContain("  usage: broker not running");
    expect(lines.at(-1)).toBe("  unknown: Redis at redis://127.0.0.1:1 is unreachable (ECONNREFUSED)");
  });

  it("a schedule with its last run", () => {
    const schedules = [{ cadence: "every 3600s", out: "/b", keep: 3, next: "2026-01-01T01:00:00.000Z", lastRun: { at: "2026-01-01T00:00:00.000Z", outcome: "succeeded" as const, jobId: "j", artifact: "/b/alpha-1", bytes: 10, reason: null, error: null }, lastSuccess: null }];
    const lines = renderSpaceInfo(doc({ backups: { reachable: true, redis: "redis://x", schedules } }));
    expect(lines.slice(-2)).toEqual(["  every 3600s into /b, keep 3; next 2026-01-01T01:00:00.000Z", "  last run: succeeded at 2026-01-01T00:00:00.000Z (/b/alpha-1)"]);
  });
});
