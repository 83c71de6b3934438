import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RootLayout, CotalError, limitsQuota, percentOf, quotaLimits, spaceCredsFiles, spaceEntry, spaceInfoFrom, usageRows, type AccountRecord, type SpaceQuota, type SpaceUsage, type StatusReport } from "../src/internal.js";

const QUOTA: SpaceQuota = { disk: 8 * 1024 ** 2, mem: 4 * 1024 ** 2, streams: 16, consumers: -1, conns: 10, subs: 10_000, payload: 1024 ** 2, leafnodes: 0 };
const USAGE: SpaceUsage = { disk: 2 * 1024 ** 2, mem: 0, streams: 3, consumers: 7, conns: 1, subs: 4 };

/** A running broker serving alpha (on disk, in the KV and the config). */
function report(running = true): StatusReport {
  return {
    root: "/r",
    exists: true,
    state: running ? "clean" : "stopped",
    why: "",
    broker: { running, staleRuntime: false, strays: [], ...(running ? { url: "nats://127.0.0.1:4222" } : {}) },
    spaces: [{ name: "alpha", publicKey: "AALPHA", createdAt: "2026-01-01T00:00:00.000Z", inConfig: true, inInventory: running }],
    corrupt: [],
    inventory: running ? ({ spaces: ["alpha"], generation: 2, revision: 5 } as unknown as StatusReport["inventory"]) : null,
    diskOnly: [],
    kvOnly: [],
    configOnly: [],
    journal: null,
    provisioningOwed: [],
    lock: null,
    quiesced: [],
  };
}

const REC = { name: "alpha", publicKey: "AALPHA", createdAt: "2026-01-01T00:00:00.000Z", limits: quotaLimits(QUOTA) } as unknown as AccountRecord;

describe("space info: usage against limits (pure)", () => {
  it("percent is used/limit to one decimal; unlimited (-1), zero and unknown give none", () => {
    expect(percentOf(3, 16)).toBe(18.8);
    expect(percentOf(0, 10)).toBe(0);
    expect(percentOf(5, -1)).toBeNull();
    expect(percentOf(5, 0)).toBeNull();
    expect(percentOf(null, 10)).toBeNull();
    expect(percentOf(3, null)).toBeNull();
  });

  it("one row per quota field; payload and leafnodes are limits only; the signed limits round-trip", () => {
    expect(limitsQuota(quotaLimits(QUOTA))).toEqual(QUOTA);
    const rows = usageRows(QUOTA, USAGE);
    expect(rows.map((r) => r.field)).toEqual(["disk", "mem", "streams", "consumers", "conns", "subs", "payload", "leafnodes"]);
    expect(rows.find((r) => r.field === "disk")).toEqual({ field: "disk", limit: QUOTA.disk, used: USAGE.disk, percent: 25 });
    expect(rows.find((r) => r.field === "consumers")).toEqual({ field: "consumers", limit: -1, used: 7, percent: null });
    expect(rows.find((r) => r.field === "payload")).toEqual({ field: "payload", limit: QUOTA.payload, used: null, percent: null });
  });

  it("no usage read: limits stand alone; no record: nothing stands", () => {
    expect(usageRows(QUOTA, null).every((r) => r.used === null && r.percent === null && r.limit !== null)).toBe(true);
    expect(usageRows(null, USAGE).every((r) => r.limit === null && r.percent === null)).toBe(true);
    expect(usageRows(QUOTA, { ...USAGE, subs: null }).find((r) => r.field === "subs")?.used).toBeNull();
  });
});

describe("space info: the document (pure)", () => {
  it("a running broker: state from the space list, usage read", () => {
    const d = spaceInfoFrom(report(), spaceEntry(report(), "alpha"), REC, USAGE, [], new Date(0));
    expect(d).toMatchObject({ space: "alpha", state: "active", rootState: "clean", publicKey: "AALPHA", broker: { running: true, url: "nats://127.0.0.1:4222" }, usage: { read: true, readAt: new Date(0).toISOString() } });
    expect(d.limits.find((r) => r.field === "conns")).toEqual({ field: "conns", limit: 10, used: 1, percent: 10 });
  });

  it("a stopped broker: the record's limits, usage says why it is absent", () => {
    const d = spaceInfoFrom(report(false), spaceEntry(report(false), "alpha"), REC, "broker not running", []);
    expect(d.usage).toEqual({ read: false, reason: "broker not running" });
    expect(d.broker).toEqual({ running: false, url: null });
    expect(d.limits.find((r) => r.field === "disk")).toMatchObject({ limit: QUOTA.disk, used: null });
  });

  it("an unknown space is space-not-found with `cotal space list` next", () => {
    let caught: unknown;
    try {
      spaceEntry(report(), "nosuch");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CotalError);
    expect(caught).toMatchObject({ code: "space-not-found", next: "cotal space list" });
  });
});

describe("space info: creds files under the root", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("lists users/*.creds sorted, then the $SYS observer; none when nothing was minted", () => {
    const root = mkdtempSync(join(tmpdir(), "cotal-info-"));
    dirs.push(root);
    const layout = new RootLayout(root);
    expect(spaceCredsFiles(layout, "alpha")).toEqual([]);
    mkdirSync(join(layout.spaceDir("alpha"), "users"), { recursive: true });
    for (const u of ["zed", "app"]) writeFileSync(layout.userCredsFile("alpha", u), "x");
    writeFileSync(join(layout.spaceDir("alpha"), "users", "notes.txt"), "not a creds file");
    writeFileSync(layout.sysCredsFile("alpha", "observer"), "x");
    expect(spaceCredsFiles(layout, "alpha")).toEqual([
      { user: "app", path: layout.userCredsFile("alpha", "app"), kind: "user" },
      { user: "zed", path: layout.userCredsFile("alpha", "zed"), kind: "user" },
      { user: "sys.observer", path: layout.sysCredsFile("alpha", "observer"), kind: "sys-observer" },
    ]);
  });
});
