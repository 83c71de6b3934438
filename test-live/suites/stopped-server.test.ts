import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, spawnCotal } from "@cotal/harness";
import { ok } from "../fixtures/space-data.js";
import { refusedWith, runPrinted } from "../fixtures/printed.js";
import { connects, credsText, disposeLiveRoots, statusOf, upRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import { parseJson, type LiveRoot } from "../fixtures/live-root.js";
import { disposeClusterRoot, upClusterRoot } from "../fixtures/cluster-root.js";
import { startRedis } from "../fixtures/jobs.js";

// Issue #28 finding 3: a stopped (SIGSTOP) nats-server holds its port and answers nothing. Every verb
// ends within its documented bound (docs/refusals.md, "Bounded time"): at once when it finds the
// server stopped, within 60 s when the server stops under it; its refusal names the process and
// prints a line that, run as printed, gets the operator out.
afterEach(async () => {
  for (const pid of stopped.splice(0)) process.kill(pid, "SIGCONT");
  await disposeLiveRoots();
  await disposeClusterRoot(cluster.splice(0)[0]);
});
const cluster: LiveRoot[] = [];
afterAll(harnessTeardown);

const stopped: number[] = [];
function stop(pid: number): void {
  process.kill(pid, "SIGSTOP");
  stopped.push(pid);
}

describe("a stopped nats-server", () => {
  it("found stopped: every verb answers within 5 s; mutating ones refuse naming the pid, status says UNREACHABLE; the printed line continues it and runs the verb", async () => {
    const { r, up } = await upRoot();
    ok(await r.cotal(["space", "add", "beta"]));
    const art = join(r.root, "..", "beta.bak");
    ok(await r.cotal(["space", "backup", "beta", "--out", art])); // positive control: the verbs work before
    stop(up.pid);
    const st = await statusOf(r);
    expect([st.state, st.why, st.next]).toEqual(["UNREACHABLE", expect.stringContaining(`pid ${up.pid}) is stopped`), `kill -CONT ${up.pid}   # then it answers again`]);
    const verbs = [
      ["space", "add", "gamma"],
      ["space", "rm", "beta", "--yes"],
      ["space", "limits", "beta", "--max-conns", "9"],
      ["space", "backup", "beta", "--out", join(r.root, "..", "b2")],
      ["space", "restore", "beta", "--from", art],
      ["broker", "reconcile"],
    ];
    let last = "";
    for (const v of verbs) {
      // 10 s is twice the bound asserted: a verb that lingers (LINGER_AFTER_VERB) is cut there, not at 30 s
      const res = await r.cotal(v, { timeoutMs: 10_000 });
      expect(res.durationMs, v.join(" ")).toBeLessThan(5_000);
      last = refusedWith(res, "broker-unreachable", 6);
      expect(res.stderr).toContain(`the nats-server (pid ${up.pid}) of this root is stopped`);
    }
    expect(last).toBe(`kill -CONT ${up.pid} && cotal --root ${r.root} broker reconcile`);
    for (const v of [["space", "list", "--json"], ["status", "--json"]]) expect((await r.cotal(v, { timeoutMs: 30_000 })).durationMs).toBeLessThan(5_000);
    // The printed line of the add, verbatim: the server continues and the add runs.
    const add = refusedWith(await r.cotal(["space", "add", "gamma"]), "broker-unreachable", 6);
    stopped.splice(0);
    ok(await runPrinted(add));
    expect(await connects(up.url, await credsText(r, "gamma"))).toBe(true);
  });

  it("stopped under a verb (after its claim): it ends within 60 s with a refusal; the lines printed, run as printed, converge to clean", async () => {
    const { r, up } = await upRoot();
    const add = spawnCotal(["space", "add", "gamma"], { root: r.root, env: { COTAL_FAILPOINT: "after-claim:sleep:1500" } });
    const exited = new Promise<{ code: number | null; stderr: string }>((res) => {
      let stderr = "";
      add.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
      add.on("exit", (code) => res({ code, stderr }));
    });
    await until("the add claimed", async () => ((await statusOf(r)).inventory?.pending ? true : undefined), 10_000);
    stop(up.pid);
    const t0 = Date.now();
    const timer = new Promise<"hung">((res) => setTimeout(() => res("hung"), 75_000).unref());
    const ended = await Promise.race([exited, timer]);
    if (ended === "hung") add.kill("SIGKILL");
    expect(ended, "the verb did not end within 75 s of its server stopping").not.toBe("hung");
    expect(Date.now() - t0).toBeLessThan(60_000);
    const res = ended as { code: number | null; stderr: string };
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/next: /);
    // The operator reads status and follows its lines, as printed.
    for (let step = 0; step < 4; step++) {
      const st = await statusOf(r);
      if (st.state === "clean") break;
      expect(st.next, JSON.stringify([st.state, st.why])).toBeDefined();
      if (st.next?.startsWith("kill -CONT")) stopped.splice(0);
      ok(await runPrinted(st.next ?? ""));
    }
    expect((await statusOf(r)).state).toBe("clean");
    expect(parseJson<{ spaces: { name: string }[] }>(await r.cotal(["space", "list", "--json"])).spaces.map((s) => s.name)).toContain("alpha");
  });
});

describe("a cluster whose node 1 is stopped", () => {
  it("verbs go through the nodes that answer: an add commits with node 1 named behind, a removal refuses within the bound naming node 1; after SIGCONT the printed lines converge", async () => {
    const { r, up } = await upClusterRoot("cotal-stopped-n1-");
    cluster.push(r);
    ok(await r.cotal(["space", "add", "beta"], { timeoutMs: 60_000 }));
    const n1 = up.nodes?.[0];
    if (!n1) throw new Error("no node 1");
    stop(n1.pid);
    // cut just past the 60 s bound: a verb that lingers (LINGER_AFTER_VERB) fails here, not at 90 s
    const add = await r.cotal(["space", "add", "gamma"], { timeoutMs: 62_000 });
    expect(add.durationMs).toBeLessThan(60_000);
    expect([0, 6], add.stderr).toContain(add.code); // committed; provisioning may wait on the stopped node
    expect(add.stderr).toContain(n1.name);
    const rm = await r.cotal(["space", "rm", "beta", "--yes"], { timeoutMs: 62_000 });
    expect(rm.durationMs, rm.stderr).toBeLessThan(60_000);
    expect(rm.code, rm.stderr).not.toBe(0);
    expect(rm.stderr).toContain(n1.name);
    expect(rm.stderr).toMatch(/next: /);
    // Node 1 continued, the operator follows status's lines as printed.
    process.kill(n1.pid, "SIGCONT");
    stopped.splice(0);
    for (let step = 0; step < 5; step++) {
      const st = await statusOf(r);
      if (st.state === "clean") break;
      expect(st.next, JSON.stringify([st.state, st.why])).toBeDefined();
      await runPrinted(st.next ?? "");
    }
    ok(await r.cotal(["space", "rm", "beta", "--yes"], { timeoutMs: 90_000 }));
    expect((await statusOf(r)).state).toBe("clean");
    const nodes = (up.nodes ?? []).map((n) => n.url);
    for (const url of nodes) expect(await connects(url, await credsText(r, "gamma")), url).toBe(true);
  });
});

/** The CLI with REDIS_URL set: its exit code, stderr, and how long it ran after printing `marker` (undefined: never printed). */
function timedRun(r: LiveRoot, argv: string[], redisUrl: string, marker: string): Promise<{ code: number | null; stderr: string; totalMs: number; lingerMs: number | undefined }> {
  const t0 = Date.now();
  const child = spawnCotal(argv, { root: r.root, env: { REDIS_URL: redisUrl } });
  child.stdin?.end();
  let stderr = "";
  let printedAt: number | undefined;
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
    if (printedAt === undefined && stderr.includes(marker)) printedAt = Date.now();
  });
  child.stdout?.resume();
  const kill = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((res) =>
    child.on("close", (code) => {
      clearTimeout(kill);
      const end = Date.now();
      res({ code, stderr, totalMs: end - t0, lingerMs: printedAt === undefined ? undefined : end - printedAt });
    }),
  );
}

describe("a stopped Redis", () => {
  // A stopped Redis accepts the TCP connect and answers nothing: ioredis's connectTimeout does not cover
  // its ready check or PING, so the probe is bounded by cotal (jobs/src/connection.ts, probeRedis). Red
  // with LINGER_AFTER_VERB: the refused verb then stays alive ~4 s on the probe's half-closed socket.
  it("jobs status, jobs schedules and space add --queue refuse redis-unreachable within 6 s and exit as soon as they print it", async () => {
    const { r } = await upRoot();
    const redis = await startRedis();
    let pid: number | undefined;
    try {
      const before = await r.cotal(["jobs", "status"], { env: { REDIS_URL: redis.url } });
      expect(before.code, before.stderr).toBe(0); // positive control: the same verb answers a running Redis
      pid = Number(/process_id:(\d+)/.exec(await redis.cli("info", "server"))?.[1]);
      expect(pid).toBeGreaterThan(0);
      stop(pid);
      for (const argv of [["jobs", "status"], ["jobs", "schedules"], ["space", "add", "gamma", "--queue"]]) {
        const t = await timedRun(r, argv, redis.url, "[redis-unreachable]");
        expect(t.code, `${argv.join(" ")}: ${t.stderr}`).toBe(6);
        expect(t.stderr).toMatch(/no answer within 3000 ms/);
        expect(t.stderr).toMatch(/\n {2}next: /);
        expect(t.lingerMs, `${argv.join(" ")} stayed alive after printing its refusal`).toBeLessThan(1_500);
        expect(t.totalMs, argv.join(" ")).toBeLessThan(6_000);
      }
      process.kill(pid, "SIGCONT");
      stopped.splice(stopped.indexOf(pid), 1);
      const after = await r.cotal(["jobs", "status"], { env: { REDIS_URL: redis.url } });
      expect(after.code, after.stderr).toBe(0);
    } finally {
      if (pid !== undefined && stopped.includes(pid)) {
        process.kill(pid, "SIGCONT");
        stopped.splice(stopped.indexOf(pid), 1);
      }
      await redis.stop();
    }
  });
});
