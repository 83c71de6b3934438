import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { SpaceListReport, StatusReport } from "@cotal/core";
import { barrierDir, barrierReached, releaseBarrier } from "../fixtures/barrier.js";
import { background, disposeJobsFixtures, jobsFixtures, jobsRoot, startWorker, tenantNames, type LiveRedis, type LiveWorker } from "../fixtures/jobs.js";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { until } from "../fixtures/until.js";

// Issue #31 item 3: adds queued beside a `space rm --queue` wait the removal out instead of failing
// on its journal (docs/commands/jobs.md, "Busy and blocked roots").

const { workers } = jobsFixtures;
afterEach(disposeJobsFixtures);
afterAll(async () => {
  await harnessTeardown();
});

function worker(r: LiveRoot, redis: LiveRedis, args: string[], env: Record<string, string> = {}): LiveWorker {
  const w = startWorker("cli", { root: r.root, redisUrl: redis.url, args: ["--batch-wait", "200", ...args], env });
  workers.push(w);
  return w;
}


/** A root with `alpha` and `doomed`, a tenants file, and a queued `space rm doomed` parked after its journal. */
async function removalParked(n: number, workerArgs: string[]): Promise<{ r: LiveRoot; env: Record<string, string>; names: string[]; file: string; w: LiveWorker; dir: string }> {
  const { r, redis, env } = await jobsRoot("cotal-blocked-");
  const add = await r.cotal(["space", "add", "doomed"]);
  expect(add.code, add.stderr).toBe(0);
  const names = tenantNames(n, "b");
  const file = join(r.root, "..", "tenants.txt");
  writeFileSync(file, `${names.join("\n")}\n`);
  const dir = barrierDir(r, "rm");
  // The removal journals, then parks (holding the root lock) until the test joins the barrier.
  const w = worker(r, redis, workerArgs, { COTAL_FAILPOINT: `rm-journaled:barrier:${dir}:2` });
  await w.ready();
  const rm = await r.cotal(["space", "rm", "doomed", "--yes", "--queue", "--no-wait", "--json"], { env });
  expect(rm.code, rm.stderr).toBe(0);
  await barrierReached(dir, "the queued removal to journal and park");
  return { r, env, names, file, w, dir };
}

async function spaceNames(r: LiveRoot): Promise<string[]> {
  return parseJson<SpaceListReport>(await r.cotal(["space", "list", "--json"])).spaces.map((s) => s.name).sort();
}

async function removed(r: LiveRoot, space: string): Promise<void> {
  await until(`${space} to be removed`, async () => ((await spaceNames(r)).includes(space) ? undefined : true), 60_000, 200);
}

async function assertConverged(r: LiveRoot, expected: string[]): Promise<void> {
  const st = parseJson<StatusReport>(await r.cotal(["status", "--json"]));
  expect(st.state).toBe("clean");
  expect(st.inventory?.pending).toBeNull();
  const inv = st.inventory?.spaces ?? [];
  expect(new Set(inv).size).toBe(inv.length); // no tenant twice
  expect([...inv].sort()).toEqual([...expected].sort());
  expect(st.spaces.map((s) => s.name).sort()).toEqual([...expected].sort());
  expect(st.spaces.every((s) => s.inConfig)).toBe(true);
  expect(await spaceNames(r)).toEqual([...expected].sort());
}

type AddOut = { completed: number; failed: { space: string; reason: string }[] };
type AddErr = { error: { code: string; message: string; next: string | null } };

describe("queued adds beside a queued removal", () => {
  it("wait the running removal out: every add commits, the removed space is gone", async () => {
    const { r, env, names, file, w, dir } = await removalParked(40, []);
    const adding = background(r, ["space", "add", "--from", file, "--queue", "--json"], env);
    // positive control: the adds really met the removal's journal and were delayed, not failed
    await until("an add to wait out the removal", () => (/space-add job \S+ waits out a busy root .*a removal of space doomed/.test(w.log()) ? true : undefined), 30_000, 50);
    releaseBarrier(dir);
    const res = await adding;
    expect(res.code, `${res.stdout}\n${res.stderr}\n--- worker\n${w.log()}`).toBe(0);
    const out = parseJson<AddOut>(res);
    expect(out.completed).toBe(names.length);
    expect(out.failed).toEqual([]);
    await removed(r, "doomed");
    await assertConverged(r, ["alpha", ...names]);
    expect(w.log()).not.toMatch(/space-add job \S+ failed/);
    const delays = [...w.log().matchAll(/space-add job \S+ waits out a busy root/g)].length;
    const batches = [...w.log().matchAll(/batch of (\d+) space-add job\(s\) committed/g)].map((m) => Number(m[1]));
    console.log(`[jobs-blocked-retry] ${names.length} adds beside a removal: ${delays} delay(s), committed in batches [${batches.join(", ")}]`);
    expect(await w.stop()).toBe(0);
  });

  it("negative control: with --blocked-retry 0 the same adds fail journal-blocked, naming the removal; re-run, they commit", async () => {
    const { r, env, names, file, w, dir } = await removalParked(10, ["--blocked-retry", "0"]);
    const res = await background(r, ["space", "add", "--from", file, "--queue", "--json"], env);
    releaseBarrier(dir);
    expect(res.code, `${res.stdout}\n${res.stderr}\n--- worker\n${w.log()}`).toBe(9);
    const err = parseJson<AddErr>(res).error;
    expect(err.code).toBe("job-failed");
    expect(err.message).toMatch(/\[journal-blocked\] a removal of space doomed .* is unfinished/);
    expect(err.message).toMatch(/next: cotal space rm doomed --yes/);
    expect(w.log()).not.toMatch(/waits out a busy root/);
    await removed(r, "doomed");
    const again = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env, timeoutMs: 120_000 });
    expect(again.code, `${again.stdout}\n${again.stderr}`).toBe(0);
    expect(parseJson<AddOut>(again).completed).toBe(names.length);
    await assertConverged(r, ["alpha", ...names]);
  });

  it("a journal a dead removal left needs the operator: the adds fail at once, not after the window", async () => {
    const { r, redis, env } = await jobsRoot("cotal-blocked-");
    expect((await r.cotal(["space", "add", "doomed"])).code).toBe(0);
    const died = await r.cotal(["space", "rm", "doomed", "--yes"], { env: { COTAL_FAILPOINT: "rm-journaled:exit" } });
    expect(died.code, died.stderr).toBe(86); // journaled, then gone: no live holder of the lock
    const w = worker(r, redis, []); // the default window: 10 minutes
    await w.ready();
    const names = tenantNames(5, "d");
    const file = join(r.root, "..", "tenants.txt");
    writeFileSync(file, `${names.join("\n")}\n`);
    const res = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env, timeoutMs: 120_000 });
    expect(res.code, `${res.stdout}\n${res.stderr}\n--- worker\n${w.log()}`).toBe(9);
    expect(res.durationMs).toBeLessThan(60_000);
    const err = parseJson<AddErr>(res).error;
    expect(err.message).toMatch(/\[journal-blocked\] a removal of space doomed .* is unfinished/);
    expect(err.message).toMatch(/next: cotal space rm doomed --yes/);
    expect(w.log()).not.toMatch(/waits out a busy root/);
    // the refusal's next finishes the removal; the same command then commits the adds
    const rm = await r.cotal(["space", "rm", "doomed", "--yes"]);
    expect(rm.code, rm.stderr).toBe(0);
    const again = await r.cotal(["space", "add", "--from", file, "--queue", "--json"], { env, timeoutMs: 120_000 });
    expect(again.code, `${again.stdout}\n${again.stderr}`).toBe(0);
    await assertConverged(r, ["alpha", ...names]);
  });
});
