import { describe, expect, it } from "vitest";
import { cell, renderSpaceInfo, type SpaceInfoDocument } from "../src/commands/space-info.js";

const MiB = 1024 ** 2;

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
    creds: [{ user: "app", path: "/r/.cotal/space.616c706861/users/app.creds", kind: "user" }],
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
    expect(lines).toContain("  app  /r/.cotal/space.616c706861/users/app.creds");
    expect(lines.at(-1)).toBe("  no backup schedule");
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
