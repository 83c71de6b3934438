import { describe, expect, it } from "vitest";
import { backupCell } from "../src/backup-cell.js";

const failed = { at: "2030-01-01T00:00:00.000Z", outcome: "failed" as const, jobId: "j", artifact: null, bytes: null, reason: "x", error: { code: "io", message: "/b/<out> is not a directory", next: "cotal --root /r space backup a --out /b/o.1 --every 1d --keep 7 --queue" } };

describe("the tenant page's backup cell", () => {
  it("a schedule whose last run failed shows the failure, its code and next, never 'none recorded'", () => {
    const text = backupCell({ lastBackup: null, backupSchedule: { every: "every 60s", next: null, lastRun: failed } }).text;
    expect(text).not.toContain("none recorded");
    expect(text).toContain("last run FAILED 2030-01-01T00:00:00.000Z: [io] /b/&lt;out&gt; is not a directory");
    expect(text).toContain("next: <code>cotal --root /r space backup a --out /b/o.1 --every 1d --keep 7 --queue</code>");
  });

  it("a failure after a success shows both: the success it still has and the failure since", () => {
    const text = backupCell({ lastBackup: { artifact: "/b/a-1", bytes: 2048, finishedAt: "t1" }, backupSchedule: { every: "every 60s", next: "t9", lastRun: failed } }).text;
    expect(text).toMatch(/succeeded t1<br><span class="mono">\/b\/a-1<\/span> \(2(\.0)? ?KiB\)/);
    expect(text).toContain("last run FAILED");
    expect(text).toContain("scheduled every 60s, next t9");
  });

  it("the positive control: no schedule and no run still reads 'none recorded'", () => {
    expect(backupCell({ lastBackup: null, backupSchedule: null }).text).toBe('<span class="muted">none recorded</span>');
  });
});
