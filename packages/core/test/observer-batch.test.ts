import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRootTrust, loadBrokerTrust, loadSpaceAccount, observerIsCurrent, RootLayout, saveSpaceAccount, toAccountRecord, createAccountTrust, writeObserverCredsBatch } from "../src/internal.js";

describe("observer creds, batched", () => {
  it("writes the missing and the stale ones (0600 in 0700 space dirs), and nothing when all are current", async () => {
    const layout = new RootLayout(join(mkdtempSync(join(tmpdir(), "cotal-observer-")), ".cotal"));
    createRootTrust(layout, "default", { multiSpace: true });
    const broker = loadBrokerTrust(layout);
    for (const n of ["a", "b", "c"]) saveSpaceAccount(layout, toAccountRecord(createAccountTrust(broker.operator, n, { kind: "space" })));
    const recs = ["default", "a", "b", "c"].map((n) => loadSpaceAccount(layout, n)!);
    const first = await writeObserverCredsBatch(layout, broker, recs);
    expect(first).toBeGreaterThanOrEqual(3);
    for (const r of recs) {
      const path = layout.sysCredsFile(r.name, "observer");
      expect(observerIsCurrent(readFileSync(path, "utf8"), broker.system, r)).toBe(true);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(layout.spaceDir(r.name)).mode & 0o777).toBe(0o700);
    }
    expect(await writeObserverCredsBatch(layout, broker, recs)).toBe(0);
    writeFileSync(layout.sysCredsFile("b", "observer"), "not creds");
    expect(await writeObserverCredsBatch(layout, broker, recs)).toBe(1);
    expect(observerIsCurrent(readFileSync(layout.sysCredsFile("b", "observer"), "utf8"), broker.system, recs[2]!)).toBe(true);
  });

  it("writes none on a root that keeps no system signing seed", async () => {
    const layout = new RootLayout(join(mkdtempSync(join(tmpdir(), "cotal-observer-")), ".cotal"));
    createRootTrust(layout, "default", { multiSpace: false });
    const broker = loadBrokerTrust(layout);
    const rec = loadSpaceAccount(layout, "default")!;
    const before = (() => { try { return readFileSync(layout.sysCredsFile("default", "observer"), "utf8"); } catch { return undefined; } })();
    expect(await writeObserverCredsBatch(layout, broker, [rec])).toBe(0);
    const after = (() => { try { return readFileSync(layout.sysCredsFile("default", "observer"), "utf8"); } catch { return undefined; } })();
    expect(after).toBe(before);
  });
});
