import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, spawnCotal, type CotalResult } from "@cotal/harness";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { seedSpace } from "../fixtures/space-data.js";

// Refusals of docs/refusals.md that no other suite reaches: each cell shows the refusal (its code),
// then runs the `next:` it printed and shows that it gets the operator out.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

function refused(res: CotalResult, code: string, exit: number): string {
  expect(res.code, res.stderr).toBe(exit);
  expect(res.stderr).toMatch(new RegExp(`\\[${code}\\]`));
  const line = res.stderr.split("\n").find((l) => l.includes("next: "));
  expect(line, res.stderr).toBeDefined();
  return (line as string).slice((line as string).indexOf("next: ") + 6).split("#")[0]?.trim() ?? "";
}

const argv = (next: string): string[] => {
  const parts = next.split(/\s+/);
  expect(parts[0]).toBe("cotal");
  return parts.slice(1);
};

/** Runs a printed `a && b` line the way a shell would: each cotal command in turn, stopping at a failure. */
async function runNext(r: { cotal(args: string[]): Promise<CotalResult> }, next: string): Promise<CotalResult> {
  let last: CotalResult | undefined;
  for (const part of next.split("&&")) {
    last = await r.cotal(argv(part.trim()));
    if (last.code !== 0) break;
  }
  return last as CotalResult;
}

describe("refusals and their printed exits", () => {
  it("live-process: rm refuses while a tenant daemon runs; stopping it and re-running removes the space", async () => {
    const { r } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    const daemon = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    const runDir = r.layout.spaceRunDir("beta");
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, "worker.pid"), String(daemon.pid));
    const rm = await r.cotal(["space", "rm", "beta", "--yes"]);
    const next = refused(rm, "live-process", 4);
    expect(next).toContain(`pid ${daemon.pid}`);
    expect((await statusOf(r)).journal).toBeNull(); // refused before the journal
    daemon.kill("SIGKILL");
    await new Promise((res) => daemon.once("exit", res));
    const again = await r.cotal(["space", "rm", "beta", "--yes"]);
    expect(again.code, again.stderr).toBe(0);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha"]);
  });

  it("space add with the broker stopped refuses and names `cotal up`; after it, the add works", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["down"])).code).toBe(0);
    const add = await r.cotal(["space", "add", "beta"]);
    const next = refused(add, "broker-not-running", 6);
    expect(next).toMatch(/^cotal (--root \S+ )?up --detach .* && cotal --root \S+ space add beta\b/); // the start, then this very command
    expect((await runNext(r, next)).code).toBe(0);
    const again = await r.cotal(["space", "add", "beta"]);
    expect(again.code, again.stderr).toBe(0);
    expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
  });

  it("lease-held: a writer on another host waits, then refuses naming the holder; re-run later, it succeeds", async () => {
    const { r } = await upRoot();
    const holder = spawnCotal(["space", "add", "gamma"], { root: r.root, env: { COTAL_FAILPOINT: "after-lease:sleep:6000" } });
    holder.stdout?.resume();
    holder.stderr?.resume();
    const held = new Promise<number>((res) => holder.on("exit", (c) => res(c ?? -1)));
    await new Promise((res) => setTimeout(res, 2_500)); // the holder is inside its lease
    const other = { COTAL_TEST_UNSAFE_SKIP_LOCK: "1", COTAL_LEASE_WAIT_MS: "1000" };
    const add = await r.cotal(["space", "add", "beta"], { env: other });
    refused(add, "lease-held", 4);
    expect(add.stderr).toContain(`pid ${holder.pid}`);
    expect(await held).toBe(0);
    const again = await r.cotal(["space", "add", "beta"], { env: other });
    expect(again.code, again.stderr).toBe(0);
    expect((await statusOf(r)).inventory?.spaces).toEqual(["alpha", "beta", "gamma"]);
  });

  it("a stream that belongs to no tenant makes backup refuse; the printed clean lists it, --yes removes it, the backup runs", async () => {
    const { r, up } = await upRoot();
    expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
    await seedSpace(up.url, await credsText(r, "beta", "tester"), "beta", 20, 0);
    expect((await r.cotal(["down", "--preserve-state"])).code).toBe(0);
    // beta's record is lost (an operator deleted it): its streams now belong to nobody
    rmSync(r.layout.accountFile("beta"));
    const out = join(r.root, "..", `alpha-${Date.now()}.bak`);
    const backup = await r.cotal(["space", "backup", "alpha", "--out", out]);
    const next = refused(backup, "store-inventory", 3);
    const listed = await r.cotal(argv(next));
    const confirm = refused(listed, "confirmation-required", 3);
    expect(listed.stderr).toMatch(/cotal_events_beta/);
    expect((await r.cotal(argv(confirm))).code).toBe(0);
    const again = await r.cotal(["space", "backup", "alpha", "--out", out]);
    expect(again.code, again.stderr).toBe(0);
  });
});
