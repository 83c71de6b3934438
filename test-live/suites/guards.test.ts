import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Kvm } from "@nats-io/kv";
import { harnessTeardown, spawnCotal } from "@cotal/harness";
import { connectAsAccount } from "@cotal/core/broker";
import { RELOAD_OK } from "@cotal/core/server-process";
import { INVENTORY_BUCKET, INVENTORY_KEY } from "@cotal/core/inventory";
import { loadAuthorityAccount } from "@cotal/core/root";
import type { LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// One cell per guard that no other cell isolates: each stops exactly one failure on its own, so
// scripts/ablate.sh can switch that guard off (COTAL_TEST_UNSAFE_*) and watch this cell go red.
// Another host is played by SKIP_LOCK on the second writer: the maintenance lock is per host.

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

const OTHER_HOST = { COTAL_TEST_UNSAFE_SKIP_LOCK: "1" };

interface Spawned {
  child: ChildProcess;
  exit: Promise<number>;
  stderr(): string;
}

function spawned(r: LiveRoot, args: string[], env: Record<string, string>): Spawned {
  const child = spawnCotal(args, { root: r.root, env });
  let err = "";
  child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  child.stdout?.resume();
  return { child, exit: new Promise((res) => child.on("exit", (c) => res(c ?? -1))), stderr: () => err };
}

/** A failpoint barrier the test releases itself: the writer waits there until the test adds a party. */
function heldBarrier(r: LiveRoot, tag: string) {
  const dir = join(r.root, "..", `hold-${tag}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  return {
    spec: (point: string) => `${point}:barrier:${dir}:2`,
    arrived: () => readdirSync(dir).length >= 1,
    release: () => writeFileSync(join(dir, "test.release"), ""),
  };
}

/**
 * W1 stops cold (SIGSTOP) at `point` holding the lease; W2, on "another host", waits out the lease
 * TTL and adds beta. W1 then wakes. The guard under test must stop W1 from erasing beta.
 */
async function pausedPastLease(point: "before-claim" | "after-materialise", beforeWake?: (r: LiveRoot) => void) {
  const { r, up } = await upRoot();
  const hold = heldBarrier(r, point);
  const w1 = spawned(r, ["space", "add", "gamma"], { COTAL_FAILPOINT: hold.spec(point), COTAL_SAGA_MAX_ATTEMPTS: "1" });
  await until(`W1 at ${point}`, hold.arrived, 20_000, 25);
  process.kill(w1.child.pid as number, "SIGSTOP");
  const keep = existsSync(r.layout.accountFile("gamma")) ? readFileSync(r.layout.accountFile("gamma")) : undefined;
  let w2 = await r.cotal(["space", "add", "beta"], { env: OTHER_HOST, timeoutMs: 60_000 });
  if (w2.code === 4 && /\[rolled-back\]/.test(w2.stderr)) w2 = await r.cotal(["space", "add", "beta"], { env: OTHER_HOST });
  expect(w2.code, w2.stderr).toBe(0);
  // W2's rollback deleted what W1 minted, a first guard; put it back so the cell tests only its own.
  if (keep && !existsSync(r.layout.accountFile("gamma"))) writeFileSync(r.layout.accountFile("gamma"), keep, { mode: 0o600 });
  beforeWake?.(r);
  hold.release();
  process.kill(w1.child.pid as number, "SIGCONT");
  const code = await w1.exit;
  return { r, up, code, stderr: w1.stderr() };
}

describe("guards, one cell each", () => {
  it.each([
    ["claim CAS", "before-claim", "between its re-read and its claim"],
    ["staged-digest CAS", "after-materialise", "between its claim and its staging"],
  ] as const)("%s: a writer paused past its lease at %s (%s) loses; beta stays trusted", (guard, point, _when) =>
    cell(`guard: ${guard}`, async () => {
      const { r, up, code, stderr } = await pausedPastLease(point);
      expect(code, stderr).toBe(4);
      expect(stderr).toMatch(/\[conflict\]/);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
    }), 120_000);

  it("log offset: a stale success line written before our SIGHUP proves nothing; the rejected config is rolled back", { ...VERSION_DEPENDENT, timeout: 60_000 }, () =>
    cell("guard: log offset", async () => {
      const { r } = await upRoot();
      appendFileSync(r.layout.logFile, `[1] 2026/01/01 00:00:00.000000 [INF] ${RELOAD_OK}\n`);
      const settings = readFileSync(r.layout.settingsFile, "utf8");
      const s = JSON.parse(settings) as { port: number };
      writeFileSync(r.layout.settingsFile, JSON.stringify({ ...s, port: s.port + 1 })); // the broker rejects a new listen port
      const add = await r.cotal(["space", "add", "beta"]);
      writeFileSync(r.layout.settingsFile, settings);
      expect(add.code, add.stderr).toBe(7);
      expect(add.stderr).toMatch(/\[reload-unproven\]/);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha"]);
      expect(st.inventory?.generation).toBe(st.inventory?.appliedGeneration);
    }));

  it("commit digest: server.conf edited between proof and commit refuses digest-mismatch; the printed reconcile converges", () =>
    cell("guard: commit digest", async () => {
      const { r, up } = await upRoot();
      const hold = heldBarrier(r, "commit");
      const w = spawned(r, ["space", "add", "beta"], { COTAL_FAILPOINT: hold.spec("after-proof") });
      await until("the writer after its proof", hold.arrived, 20_000, 25);
      appendFileSync(r.layout.serverConf, "# edited by hand\n");
      hold.release();
      const code = await w.exit;
      expect(code, w.stderr()).toBe(3);
      expect(w.stderr()).toMatch(/\[digest-mismatch\]/);
      expect(w.stderr()).toMatch(/next: cotal (--root \S+ )?broker reconcile/);
      const fix = await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes"]);
      expect(fix.code, fix.stderr).toBe(0);
      const st = await statusOf(r);
      expect(st.state).toBe("clean");
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      expect(await connects(up.url, await credsText(r, "beta"))).toBe(true);
    }), 60_000);

  it("seed create-only CAS: a late seeder never overwrites a record another process seeded and moved on", () =>
    cell("guard: seed create-only CAS", async () => {
      const { r, up } = await upRoot();
      const nc = await connectAsAccount(up.url, loadAuthorityAccount(r.layout), { name: "test: forget the record" });
      try {
        const kv = await new Kvm(nc).open(INVENTORY_BUCKET);
        await kv.delete(INVENTORY_KEY); // a broker that predates the inventory: up seeds it from disk
      } finally {
        await nc.close();
      }
      const hold = heldBarrier(r, "seed");
      const late = spawned(r, ["up", "--detach"], { COTAL_FAILPOINT: hold.spec("before-seed") });
      await until("the late seeder", hold.arrived, 20_000, 25);
      const early = await r.cotal(["up", "--detach"], { env: OTHER_HOST });
      expect(early.code, early.stderr).toBe(0);
      const add = await r.cotal(["space", "add", "beta"], { env: OTHER_HOST });
      expect(add.code, add.stderr).toBe(0);
      hold.release();
      expect(await late.exit).toBe(0);
      const st = await statusOf(r);
      expect(st.inventory?.spaces).toEqual(["alpha", "beta"]);
      expect(st.state).toBe("clean");
    }), 60_000);
});

