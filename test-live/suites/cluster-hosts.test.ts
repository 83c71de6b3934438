import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cotalCliPath, repoRoot, type CotalResult } from "@cotal/harness";
import type { UpResult } from "@cotal/core";
import { liveRoot, type LiveRoot } from "../fixtures/live-root.js";
import { killServersUnder } from "../fixtures/processes.js";
import { until } from "../fixtures/until.js";
import { sleep } from "../fixtures/isolation.js";
import { refusedWith, runPrinted } from "../fixtures/printed.js";

// A cluster on three simulated hosts (docs/cluster.md "A cluster across hosts"): network namespaces
// from infra/hosts.sh, one node on each at 10.99.0.<i>, started by `cotal node run` inside its own
// host; the control host (host 1) runs the verbs. The processes' environment (an ablation's switch)
// reaches every cotal run here. The hosts reach each other and nothing else, so
// every route and every proof crosses the hosts' link, over the routes' mutual TLS.
const SCRIPT = join(repoRoot(), "infra", "hosts.sh");
const PREFIX = "ctstclu";
const hostsEnv = { ...process.env, COTAL_HOSTS_PREFIX: PREFIX };
const HOSTS = ["10.99.0.1", "10.99.0.2", "10.99.0.3"];
const canNetns = process.getuid?.() === 0 && spawnSync("ip", ["netns", "list"]).status === 0;
if (!canNetns) console.log("[cluster-hosts] skipped: needs root and `ip netns`");

const children: ChildProcess[] = [];
let r: LiveRoot | undefined;

function hosts(...args: string[]): void {
  const res = spawnSync("bash", [SCRIPT, ...args], { env: hostsEnv, encoding: "utf8", timeout: 30_000 });
  if (res.status !== 0) throw new Error(`hosts.sh ${args.join(" ")}: ${res.stderr}`);
}

/** `cotal <args>` run inside host `h` (1-3), to completion. */
function onHost(h: number, args: string[], timeoutMs = 90_000): Promise<CotalResult> {
  const root = (r as LiveRoot).root;
  const t0 = Date.now();
  let timedOut = false;
  const child = spawn("bash", [SCRIPT, "exec", String(h), process.execPath, cotalCliPath(), "--root", root, ...args], { env: hostsEnv });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const timer = setTimeout(() => ((timedOut = true), child.kill("SIGKILL")), timeoutMs);
  return new Promise((res) => child.on("close", (code, signal) => (clearTimeout(timer), res({ code, signal, stdout, stderr, durationMs: Date.now() - t0, timedOut }))));
}

/** A long-running process inside host `h` (an agent, a poller), killed at teardown. */
function startOnHost(h: number, argv: string[]): { child: ChildProcess; out: () => string } {
  const child = spawn("bash", [SCRIPT, "exec", String(h), ...argv], { env: hostsEnv });
  children.push(child);
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  return { child, out: () => out };
}

interface Attempt {
  at: number;
  ok: boolean;
  why: string;
}
function attemptsOf(text: string): Attempt[] {
  return text.split("\n").flatMap((l) => {
    const m = /^(\d+) (ok|fail)(?: (.*))?$/.exec(l);
    return m ? [{ at: Number(m[1]), ok: m[2] === "ok", why: m[3] ?? "" }] : [];
  });
}

afterAll(async () => {
  for (const c of children) c.kill("SIGTERM");
  await sleep(300);
  for (const c of children) c.kill("SIGKILL");
  if (r) {
    await killServersUnder(dirname(r.root));
    await r.dispose();
  }
  if (canNetns) hosts("down");
});

interface HostCluster {
  nodes: { name: string; port: number; host: string }[];
  agents: { out: () => string }[];
}
let cluster: Promise<HostCluster> | undefined;

/**
 * Three hosts, the root created by the control host (host 1), each node started by the `cotal node run`
 * agent on its own host, the record applied across the hosts' link. Made once for the file's cells.
 */
function hostCluster(): Promise<HostCluster> {
  cluster ??= (async () => {
    hosts("up", "3");
    r = await liveRoot("cotal-hosts-");
    // The control host creates the root: it starts the node on its own address only, and names the others.
    // Tenant streams R3: with one host cut off, the other two still delete a removed tenant's streams.
    const created = await onHost(1, ["up", "--cluster", "3", "--tenant-replicas", "3", "--detach", "--port", String(r.port), "--node-hosts", HOSTS.join(",")]);
    expect(created.code, created.stderr).toBe(6);
    expect(created.stderr).toMatch(/\[broker-not-running\]/);
    expect(created.stderr).toMatch(/-n2 \(host 10\.99\.0\.2\).*-n3 \(host 10\.99\.0\.3\)/);
    const settings = JSON.parse(readFileSync(r.layout.settingsFile, "utf8")) as { cluster: { nodes: { name: string; port: number; host: string }[] } };
    const nodes = settings.cluster.nodes;
    expect(nodes.map((n) => n.host)).toEqual(HOSTS);
    // Each host runs its node's agent, which starts the node there (nodes 2 and 3) or adopts it (node 1).
    const agents = nodes.map((n, i) => startOnHost(i + 1, [process.execPath, cotalCliPath(), "--root", r?.root ?? "", "node", "run", "--node", n.name]));
    await until("every node recorded running", async () => {
      const rt = JSON.parse(readFileSync(r?.layout.runtimeFile ?? "", "utf8")) as { nodes?: { name: string }[] };
      return (rt.nodes ?? []).length === 3 ? true : undefined;
    }, 30_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agents said:\n${agents.map((a) => a.out()).join("\n---\n")}`);
    });
    // The control host seeds the record and applies it to every node, across the hosts' link.
    const up = await onHost(1, ["up", "--detach", "--json"]);
    expect(up.code, `${up.stderr}\nagents:\n${agents.map((a) => a.out()).join("\n---\n")}`).toBe(0);
    const res = JSON.parse(up.stdout) as UpResult;
    expect((res.nodes ?? []).map((n) => n.url)).toEqual(nodes.map((n) => `nats://${n.host}:${n.port}`));
    for (const n of nodes) expect(readFileSync((r as LiveRoot).layout.nodeServerConf(n.name), "utf8")).toContain(`listen: "${n.host}:${n.port}"`);
    return { nodes, agents };
  })();
  return cluster;
}

/** `space add <space>` on the control host, then its cred (`--user u`) as a file every host reads. */
async function addWithCred(space: string): Promise<string> {
  const add = await onHost(1, ["space", "add", space]);
  expect(add.code, add.stderr).toBe(0);
  const credsRes = await onHost(1, ["space", "creds", space, "--user", "u", "--json"]);
  expect(credsRes.code, credsRes.stderr).toBe(0);
  return (JSON.parse(credsRes.stdout) as { path: string }).path;
}

/** One poller on each host, each asking its own host's node, until every host admitted the cred once (the positive control). */
async function pollEveryHost(c: HostCluster, credsFile: string): Promise<{ child: ChildProcess; out: () => string }[]> {
  const pollers = c.nodes.map((n, i) => startOnHost(i + 1, [process.execPath, join(repoRoot(), "test-live", "fixtures", "host-poller.mjs"), `nats://${n.host}:${n.port}`, credsFile, "2"]));
  await until("admitted on every host (the positive control)", async () => (pollers.every((p) => attemptsOf(p.out()).some((a) => a.ok)) ? true : undefined), 30_000, 200).catch((e: Error) => {
    throw new Error(`${e.message}: ${pollers.map((p) => p.out().split("\n").slice(-3).join(" | ")).join(" || ")}`);
  });
  return pollers;
}

/** After `done` (the removal reported done): every host polled, none admitted. Stops the pollers. */
async function noneAdmittedAfter(pollers: { child: ChildProcess; out: () => string }[], done: number, label: string): Promise<void> {
  await sleep(1_500);
  for (const p of pollers) p.child.kill("SIGTERM");
  await sleep(300);
  for (const [i, p] of pollers.entries()) {
    const attempts = attemptsOf(p.out());
    const after = attempts.filter((a) => a.at >= done);
    console.log(`[cluster-hosts] ${label}: host ${i + 1}: ${attempts.length} attempts, ${attempts.filter((a) => a.ok).length} admitted, ${after.length} after the removal (${after[0]?.why ?? "-"})`);
    expect(after.length, `host ${i + 1} polled after the removal was reported done`).toBeGreaterThan(0);
    expect(after.filter((a) => a.ok).length, `host ${i + 1}: admitted after the removal was reported done`).toBe(0);
  }
}

async function expectAllClean(): Promise<void> {
  const st = await onHost(1, ["status", "--json"]);
  const report = JSON.parse(st.stdout) as { broker: { nodes?: { name: string; state?: string }[] } };
  expect((report.broker.nodes ?? []).map((n) => n.state), st.stdout.slice(0, 2_000)).toEqual(["clean", "clean", "clean"]);
}

describe.skipIf(!canNetns)("a cluster across three simulated hosts", () => {
  it("each node on its own host, started by its cotal node run; add then rm with the removed cred polled from every host", async () => {
    const c = await hostCluster();
    const pollers = await pollEveryHost(c, await addWithCred("beta"));
    const rm = await onHost(1, ["space", "rm", "beta", "--yes"]);
    const done = Date.now();
    expect(rm.code, rm.stderr).toBe(0);
    await noneAdmittedAfter(pollers, done, "beta");
    // Every node proved the last generation; the agents followed.
    await expectAllClean();
  });

  it.each([
    ["space rm", "gamma", ["space", "rm", "gamma", "--yes"]],
    ["space revoke", "delta", ["space", "revoke", "delta", "--user", "u"]],
  ])("partition by a cut link: host 3 cut off, then %s: refused cluster-unproven naming node 3, never reported done; after heal the printed next completes it and no host admits the cred again", async (_verb, space, argv) => {
    const c = await hostCluster();
    const n3 = c.nodes[2]?.name as string;
    const pollers = await pollEveryHost(c, await addWithCred(space));
    hosts("cut", "3");
    let healed = false;
    try {
      // Control: the cut is real; host 1 does not reach node 3.
      const seen = await onHost(1, ["status", "--json"]);
      const reach = (JSON.parse(seen.stdout) as { broker: { nodes?: { name: string; reachable?: boolean | null }[] } }).broker.nodes?.map((n) => n.reachable);
      expect(reach, seen.stdout.slice(0, 2_000)).toEqual([true, true, false]);
      let res = await onHost(1, argv, 180_000);
      // If node 3 led the meta group, JetStream may time out until nodes 1 and 2 elect another leader:
      // that refusal (before any trust changes) is re-run as printed.
      for (let step = 0; res.code === 6 && /\[broker-unreachable\]/.test(res.stderr) && step < 3; step++) {
        res = await runPrinted(refusedWith(res, "broker-unreachable", 6), { COTAL_HOSTS_PREFIX: PREFIX }, 180_000, ["bash", SCRIPT, "exec", "1"]);
      }
      const at = Date.now();
      if (res.code === 0) {
        // Reported done with node 3 cut off: its host must never admit the cred again (the report is a lie if it does).
        await noneAdmittedAfter(pollers, at, `${space}, reported done while cut`);
      }
      const next = refusedWith(res, "cluster-unproven", 7);
      expect(res.stderr).toContain(`${n3} did not prove the new config`);
      expect(res.stderr).toMatch(/a node on another host is asked, never signalled/);
      // Not done, and each side says so as it is: nodes 1 and 2 refuse the cred, node 3 (not reached) still admits it.
      await until("nodes 1 and 2 refuse the cred", async () => (pollers.slice(0, 2).every((p) => attemptsOf(p.out()).some((a) => a.at > at && !a.ok)) ? true : undefined), 15_000, 200);
      expect(attemptsOf(pollers[2]?.out() ?? "").filter((a) => a.at > at && a.ok).length, "host 3 keeps admitting the cred while cut (not done)").toBeGreaterThan(0);
      hosts("heal", "3");
      healed = true;
      // The printed next, verbatim, on the control host, until it exits 0 (the chaos rule: only printed lines).
      let line = next;
      let last = await runPrinted(line, { COTAL_HOSTS_PREFIX: PREFIX }, 240_000, ["bash", SCRIPT, "exec", "1"]);
      for (let step = 0; last.code !== 0 && step < 3; step++) {
        const more = last.stderr.split("\n").find((l) => l.startsWith("  next: "))?.slice("  next: ".length);
        expect(more, `${line} exited ${last.code} with no next:\n${last.stderr}`).toBeDefined();
        expect(more, `the printed next loops back to itself:\n${last.stderr}`).not.toBe(line);
        line = more as string;
        last = await runPrinted(line, { COTAL_HOSTS_PREFIX: PREFIX }, 240_000, ["bash", SCRIPT, "exec", "1"]);
      }
      expect(last.code, `${line}\n${last.stdout}\n${last.stderr}`).toBe(0);
      await noneAdmittedAfter(pollers, Date.now(), `${space}, after the heal`);
      await expectAllClean();
    } finally {
      if (!healed) hosts("heal", "3");
    }
  });
});
