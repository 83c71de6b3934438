import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cotalCliPath, NKEY_SEED, repoRoot, type CotalResult } from "@cotal/harness";
import type { UpResult } from "@cotal/core";
import { liveRoot, type LiveRoot } from "../fixtures/live-root.js";
import { alive, killServersUnder } from "../fixtures/processes.js";
import { until } from "../fixtures/until.js";
import { sleep } from "../fixtures/isolation.js";
import { printedProcess, refusedWith, runPrinted } from "../fixtures/printed.js";
import { SpawnedAppClient } from "../fixtures/spawned-app.js";
import { barrierReached, releaseBarrier } from "../fixtures/barrier.js";
import { spaceTemplate } from "@cotal/core/provision";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// A cluster on three simulated hosts (docs/cluster.md "A cluster across hosts"): network namespaces
// from infra/hosts.sh, one node on each at 10.99.0.<i>, started by `cotal node run` inside its own
// host; the control host (host 1) runs the verbs. The processes' environment (an ablation's switch)
// reaches every cotal run here. The hosts reach each other and nothing else, so
// every route and every proof crosses the hosts' link, over the routes' mutual TLS.
const SCRIPT = join(repoRoot(), "infra", "hosts.sh");
// Its own set of hosts; ablation runs its rows beside others, each row on a set of its own (COTAL_TEST_HOSTS_PREFIX).
const PREFIX = process.env.COTAL_TEST_HOSTS_PREFIX ?? "ctstclu";
const hostsEnv = { ...process.env, COTAL_HOSTS_PREFIX: PREFIX };
/**
 * The shared set-up's environment: an ablation's switch (COTAL_TEST_UNSAFE_*) bites in the cells'
 * own verbs and agents, never in the cluster every cell starts from, so a red row is red in its cell.
 */
const setupEnv = Object.fromEntries(Object.entries(hostsEnv).filter(([k]) => !k.startsWith("COTAL_TEST_UNSAFE_")));
const HOSTS = ["10.99.0.1", "10.99.0.2", "10.99.0.3"];
const canNetns = process.getuid?.() === 0 && spawnSync("ip", ["netns", "list"]).status === 0;
if (!canNetns) console.log("[cluster-hosts] skipped: needs root and `ip netns`");

const children: ChildProcess[] = [];
let r: LiveRoot | undefined;
/** The surviving tenant's applications, inside the hosts for the whole file (see hostCluster). */
const apps: SpawnedAppClient[] = [];

function hosts(...args: string[]): void {
  const res = spawnSync("bash", [SCRIPT, ...args], { env: hostsEnv, encoding: "utf8", timeout: 30_000 });
  if (res.status !== 0) throw new Error(`hosts.sh ${args.join(" ")}: ${res.stderr}`);
}

/**
 * What a host cannot see of the others' disks: the control host (host 1) runs every verb with nodes 2
 * and 3's log and store directories empty and read-only (`hosts.sh exec --hide`), as on real hosts, so
 * it proves those nodes by their servers' word (docs/cluster.md "Proof by the server's digest").
 */
function via(h: number): string[] {
  const hidden = h !== 1 || !r ? [] : [...remoteNodeNames.flatMap((n) => [dirname((r as LiveRoot).layout.nodeLogFile(n)), (r as LiveRoot).layout.nodeStoreDir(n)]), ...controlHidden].filter((d) => existsSync(d));
  return ["bash", SCRIPT, "exec", String(h), ...hidden.flatMap((d) => ["--hide", d])];
}
let remoteNodeNames: string[] = [];
/** Directories of other hosts the control host must not read (a node's own directory). */
const controlHidden: string[] = [];

/** `cotal <args>` run inside host `h` (1-3), to completion. */
function onHost(h: number, args: string[], timeoutMs = 90_000, env: Record<string, string> = {}, base: NodeJS.ProcessEnv = hostsEnv, other?: { root: string; hide: string[] }): Promise<CotalResult> {
  const root = other?.root ?? (r as LiveRoot).root;
  const t0 = Date.now();
  let timedOut = false;
  const [cmd, ...pre] = other ? ["bash", SCRIPT, "exec", String(h), ...other.hide.filter((d) => existsSync(d)).flatMap((d) => ["--hide", d])] : via(h);
  const child = spawn(cmd as string, [...pre, process.execPath, cotalCliPath(), "--root", root, ...args], { env: { ...base, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const timer = setTimeout(() => ((timedOut = true), child.kill("SIGKILL")), timeoutMs);
  return new Promise((res) => child.on("close", (code, signal) => (clearTimeout(timer), res({ code, signal, stdout, stderr, durationMs: Date.now() - t0, timedOut }))));
}

/** A long-running process inside host `h` (an agent, a poller), killed at teardown. */
function startOnHost(h: number, argv: string[], base: NodeJS.ProcessEnv = hostsEnv): { child: ChildProcess; out: () => string } {
  const child = spawn("bash", [SCRIPT, "exec", String(h), ...argv], { env: base });
  children.push(child);
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
  return { child, out: () => out };
}

/** The files under `dir` holding an nkeys seed (the harness's one pattern), read as bytes. */
function scanForSeeds(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => NKEY_SEED.test(readFileSync(f).toString("latin1")));
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
  await Promise.all(apps.splice(0).map((a) => a.stop()));
  for (const c of children) c.kill("SIGTERM");
  await sleep(300);
  for (const c of children) c.kill("SIGKILL");
  if (r) {
    await killServersUnder(dirname(r.root));
    await r.dispose();
  }
  if (canNetns) hosts("down");
});

/** Where the spawned applications' creds files go, beside the root. */
const appsDir = (): string => join(dirname((r as LiveRoot).root), "apps");

/** A tenant's application run inside host `h`, given every node's URL. */
function appOnHost(h: number, nodes: readonly { host: string; port: number }[], creds: string, space: string, client: "nats-py" | "nats.js"): Promise<SpawnedAppClient> {
  const via = ["env", `COTAL_HOSTS_PREFIX=${PREFIX}`, "bash", SCRIPT, "exec", String(h)];
  return SpawnedAppClient.start(nodes.map((n) => `nats://${n.host}:${n.port}`), creds, join(appsDir(), `${space}-${client}-h${h}.creds`), space, { client, via });
}

interface HostCluster {
  nodes: { name: string; port: number; host: string }[];
  /** Each host's agent; a cell may replace one (the public bucket's cell restarts host 2's with the tenants' records hidden). */
  agents: { child: ChildProcess; out: () => string }[];
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
    const created = await onHost(1, ["up", "--cluster", "3", "--tenant-replicas", "3", "--detach", "--port", String(r.port), "--node-hosts", HOSTS.join(",")], 90_000, {}, setupEnv);
    expect(created.code, created.stderr).toBe(6);
    expect(created.stderr).toMatch(/\[broker-not-running\]/);
    expect(created.stderr).toMatch(/-n2 \(host 10\.99\.0\.2\).*-n3 \(host 10\.99\.0\.3\)/);
    const settings = JSON.parse(readFileSync(r.layout.settingsFile, "utf8")) as { cluster: { nodes: { name: string; port: number; host: string }[] } };
    const nodes = settings.cluster.nodes;
    expect(nodes.map((n) => n.host)).toEqual(HOSTS);
    remoteNodeNames = nodes.slice(1).map((n) => n.name);
    // Each host runs its node's agent, which starts the node there (nodes 2 and 3) or adopts it (node 1).
    const agents = nodes.map((n, i) => startOnHost(i + 1, [process.execPath, cotalCliPath(), "--root", r?.root ?? "", "node", "run", "--node", n.name], setupEnv));
    await until("every node recorded running", async () => {
      const rt = JSON.parse(readFileSync(r?.layout.runtimeFile ?? "", "utf8")) as { nodes?: { name: string }[] };
      return (rt.nodes ?? []).length === 3 ? true : undefined;
    }, 30_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agents said:\n${agents.map((a) => a.out()).join("\n---\n")}`);
    });
    // The control host seeds the record and applies it to every node, across the hosts' link.
    const up = await onHost(1, ["up", "--detach", "--json"], 90_000, {}, setupEnv);
    expect(up.code, `${up.stderr}\nagents:\n${agents.map((a) => a.out()).join("\n---\n")}`).toBe(0);
    const res = JSON.parse(up.stdout) as UpResult;
    expect((res.nodes ?? []).map((n) => n.url)).toEqual(nodes.map((n) => `nats://${n.host}:${n.port}`));
    for (const n of nodes) expect(readFileSync((r as LiveRoot).layout.nodeServerConf(n.name), "utf8")).toContain(`listen: "${n.host}:${n.port}"`);
    // The surviving tenant: alpha's applications run inside hosts 1 and 2 (nats-py there, nats.js here),
    // each given every node's URL, and write and read alpha's R3 KV through every cell of the file.
    const alpha = readFileSync(await addWithCred("alpha", "app", setupEnv), "utf8");
    mkdirSync(appsDir(), { recursive: true, mode: 0o700 });
    apps.push(await appOnHost(1, nodes, alpha, "alpha", "nats-py"));
    apps.push(await appOnHost(2, nodes, alpha, "alpha", "nats.js"));
    await appsKeepWriting("start");
    return { nodes, agents };
  })();
  return cluster;
}

/** An agent that said it cannot render from the node material never will this round: fail at once, naming its line (undefined: keep waiting). */
function refusedToRender(out: string): undefined {
  const line = out.split("\n").find((l) => /not published yet|which the published node material lacks/.test(l));
  if (line) throw new Error(`the agent refused to render from the node material: ${line}`);
  return undefined;
}

/** Host `h`'s agent stopped and started again with `env` over `base` (the cell's own: an ablation's switch bites there); returns once it serves. */
async function restartAgent(c: HostCluster, h: number, env: Record<string, string>, base: NodeJS.ProcessEnv = hostsEnv): Promise<HostCluster["agents"][number]> {
  const old = c.agents[h - 1] as HostCluster["agents"][number];
  old.child.kill("SIGTERM");
  await until(`host ${h}'s agent stopped`, () => (old.child.exitCode !== null || old.child.signalCode !== null ? true : undefined), 30_000, 100);
  const agent = startOnHost(h, [process.execPath, cotalCliPath(), "--root", (r as LiveRoot).root, "node", "run", "--node", c.nodes[h - 1]?.name ?? ""], { ...base, ...env });
  c.agents[h - 1] = agent;
  await until(`host ${h}'s agent serving`, () => (/: serving generation \d+/.test(agent.out()) ? true : undefined), 60_000, 250).catch((e: Error) => {
    throw new Error(`${e.message}: agent ${h} said:\n${agent.out()}`);
  });
  return agent;
}

/** `space add <space>` on the control host, then its cred (`--user u`) as a file every host reads. */
async function addWithCred(space: string, user = "u", base: NodeJS.ProcessEnv = hostsEnv): Promise<string> {
  const add = await onHost(1, ["space", "add", space], 90_000, {}, base);
  expect(add.code, add.stderr).toBe(0);
  const credsRes = await onHost(1, ["space", "creds", space, "--user", user, "--json"], 90_000, {}, base);
  expect(credsRes.code, credsRes.stderr).toBe(0);
  return (JSON.parse(credsRes.stdout) as { path: string }).path;
}

/** One poller on each host, each asking its own host's node, until every host admitted the cred once (the positive control). */
async function pollEveryHost(c: HostCluster, credsFile: string, publish: string[] = []): Promise<{ child: ChildProcess; out: () => string }[]> {
  const pollers = c.nodes.map((n, i) => startOnHost(i + 1, [process.execPath, join(repoRoot(), "test-live", "fixtures", "host-poller.mjs"), `nats://${n.host}:${n.port}`, credsFile, "2", ...publish]));
  await until("admitted on every host (the positive control)", async () => (pollers.every((p) => attemptsOf(p.out()).some((a) => a.ok)) ? true : undefined), 30_000, 200).catch((e: Error) => {
    throw new Error(`${e.message}: ${pollers.map((p) => p.out().split("\n").slice(-3).join(" | ")).join(" || ")}`);
  });
  return pollers;
}

/** After `done` (the removal reported done): every host polled, none admitted. Stops the pollers. */
async function noneAdmittedAfter(pollers: { child: ChildProcess; out: () => string }[], done: number, label: string): Promise<void> {
  await sleep(1_500);
  // Under load an attempt can take seconds (the poller bounds each at 3 s): wait until every host began one after the verb.
  await until("every host polled after the verb", async () => (pollers.every((p) => attemptsOf(p.out()).some((a) => a.at >= done)) ? true : undefined), 15_000, 200).catch(() => undefined);
  await sleep(300);
  for (const p of pollers) p.child.kill("SIGTERM");
  await sleep(300);
  for (const [i, p] of pollers.entries()) {
    const attempts = attemptsOf(p.out());
    const after = attempts.filter((a) => a.at >= done);
    console.log(`[cluster-hosts] ${label}: host ${i + 1}: ${attempts.length} attempts, ${attempts.filter((a) => a.ok).length} admitted, ${after.length} after the verb (${after[0]?.why ?? "-"})`);
    expect(after.length, `host ${i + 1} polled after the verb was reported done`).toBeGreaterThan(0);
    expect(after.filter((a) => a.ok).length, `host ${i + 1}: admitted after the verb was reported done`).toBe(0);
  }
}

/**
 * The surviving tenant's view after `label`: each application wrote and read its KV (and published)
 * again within 30 s, and neither closed for good. A cell's verb never concerns alpha.
 */
async function appsKeepWriting(label: string): Promise<void> {
  for (const app of apps) {
    await app.writable(30_000);
    expect(app.report.closed, `${label}: an application of alpha closed for good`).toBe(false);
  }
  console.log(`[cluster-hosts] alpha after ${label}: ${apps.map((a, i) => `${i === 0 ? "nats-py" : "nats.js"} ${a.report.kvPuts} KV writes, ${a.report.kvFailures.length} failed, ${a.report.disconnects.length} disconnects`).join("; ")}`);
}

async function expectAllClean(): Promise<void> {
  const st = await onHost(1, ["status", "--json"]);
  const report = JSON.parse(st.stdout) as { broker: { nodes?: { name: string; state?: string }[] } };
  expect((report.broker.nodes ?? []).map((n) => n.state), st.stdout.slice(0, 2_000)).toEqual(["clean", "clean", "clean"]);
}

/**
 * The printed next, verbatim, on the control host, then each next it prints, until the verb's own line
 * exits 0 (the chaos rule: only printed lines). A line printed by a refusal of the first command of a
 * compound next (`cotal up && cotal space rm …`) re-runs that command alone; once it exits 0, the
 * verb's own line runs again, since its work is not done.
 */
async function followPrinted(next: string): Promise<void> {
  let line = next;
  let last = await runPrinted(line, { COTAL_HOSTS_PREFIX: PREFIX }, 240_000, via(1));
  const said = (): void => console.log(`[cluster-hosts] printed: ${line}\n  → exit ${last.code}: ${last.stderr.trim().split("\n").slice(-4).join(" | ")}`);
  said();
  for (let step = 0; !(last.code === 0 && line === next) && step < 4; step++) {
    if (last.code === 0) {
      line = next;
    } else {
      const more = last.stderr.split("\n").find((l) => l.startsWith("  next: "))?.slice("  next: ".length);
      expect(more, `${line} exited ${last.code} with no next:\n${last.stderr}`).toBeDefined();
      expect(more, `the printed next loops back to itself:\n${last.stderr}`).not.toBe(line);
      line = more as string;
    }
    last = await runPrinted(line, { COTAL_HOSTS_PREFIX: PREFIX }, 240_000, via(1));
    said();
  }
  expect(last.code, `${line}\n${last.stdout}\n${last.stderr}`).toBe(0);
  expect(line, "the verb's own printed line ran to exit 0").toBe(next);
}

describe.skipIf(!canNetns)("a cluster across three simulated hosts", () => {
  // Version-dependent: 2.11+ also proves a node elsewhere by its VARZ digest; 2.9.10 and 2.10 (no digest, 2.9.10 no reload request) through its agent's answer alone.
  it("each node on its own host, started by its cotal node run; add then rm with the removed cred polled from every host", VERSION_DEPENDENT, async () => {
    const c = await hostCluster();
    const pollers = await pollEveryHost(c, await addWithCred("beta"));
    const rm = await onHost(1, ["space", "rm", "beta", "--yes"]);
    const done = Date.now();
    expect(rm.code, rm.stderr).toBe(0);
    await noneAdmittedAfter(pollers, done, "beta");
    // Every node proved the last generation; the agents followed.
    await expectAllClean();
    await appsKeepWriting("space rm beta");
  });

  it.each([
    ["before", "space rm", "gamma", ["space", "rm", "gamma", "--yes"]],
    ["before", "space revoke", "delta", ["space", "revoke", "delta", "--user", "u"]],
    ["during", "space rm", "eta", ["space", "rm", "eta", "--yes"]],
  ])("partition by a cut link: host 3 cut off %s %s: refused cluster-unproven naming node 3, never reported done; after heal the printed next completes it and no host admits the cred again", async (when, _verb, space, argv) => {
    const c = await hostCluster();
    const n3 = c.nodes[2]?.name as string;
    const pollers = await pollEveryHost(c, await addWithCred(space));
    // "during": the verb parks right after node 1 proved its claim (nodes are reloaded in order), and the link is cut there
    const gate = join(dirname((r as LiveRoot).root), `gate-cut-${space}-${Date.now()}`);
    const running = when === "during" ? onHost(1, argv, 180_000, { COTAL_FAILPOINT: `after-node-proof#1:barrier:${gate}:2` }) : undefined;
    if (running) await barrierReached(gate, "the verb parked after node 1's proof", 60_000);
    const agentSaid = c.agents[2]?.out().length ?? 0;
    hosts("cut", "3");
    let healed = false;
    let converged = false;
    try {
      // Control: the cut is real; host 1 does not reach node 3.
      const seen = await onHost(1, ["status", "--json"]);
      const reach = (JSON.parse(seen.stdout) as { broker: { nodes?: { name: string; reachable?: boolean | null }[] } }).broker.nodes?.map((n) => n.reachable);
      expect(reach, seen.stdout.slice(0, 2_000)).toEqual([true, true, false]);
      if (running) releaseBarrier(gate);
      let res = running ? await running : await onHost(1, argv, 180_000);
      // If node 3 led the meta group, JetStream may time out until nodes 1 and 2 elect another leader:
      // that refusal (before any trust changes) is re-run as printed.
      for (let step = 0; res.code === 6 && /\[broker-unreachable\]/.test(res.stderr) && step < 3; step++) {
        res = await runPrinted(refusedWith(res, "broker-unreachable", 6), { COTAL_HOSTS_PREFIX: PREFIX }, 180_000, via(1));
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
      // Node 3 keeps admitting it as it did before the verb, unless its own agent, which cannot reach a
      // quorum and sees its R3 tenant streams unserved, restarted it with every tenant held (safer still:
      // docs/cluster.md "Partition by a cut link"). Either way it was not told the verb is done.
      await until("host 3 polled after the verb", async () => (attemptsOf(pollers[2]?.out() ?? "").some((a) => a.at > at + 500) ? true : undefined), 15_000, 200);
      const heldByItsAgent = /with every tenant held/.test(c.agents[2]?.out().slice(agentSaid) ?? "");
      if (!heldByItsAgent) expect(attemptsOf(pollers[2]?.out() ?? "").filter((a) => a.at > at && a.ok).length, "host 3 keeps admitting the cred while cut (not done)").toBeGreaterThan(0);
      hosts("heal", "3");
      healed = true;
      await followPrinted(next);
      converged = true;
      await noneAdmittedAfter(pollers, Date.now(), `${space}, after the heal`);
      await expectAllClean();
      // alpha's applications run on hosts 1 and 2, the majority: they write through the cut and the heal
      await appsKeepWriting(`the cut ${when} ${_verb} and the heal`);
    } finally {
      if (!healed) hosts("heal", "3");
      // A cell that failed before its verb converged finishes it, so the file's later cells start on a clean root.
      for (let step = 0; !converged && step < 3; step++) converged = (await onHost(1, argv, 180_000)).code === 0;
    }
  });
  it("proof by the server's digest: node 2 loads other bytes than its agent renamed for it (still listing theta) while `space rm theta` waits on the agent's answer; the agent's own VARZ check refuses that load and applies again, so the removal is reported done only once node 2 runs the claim's bytes, and no host admits theta after (red with NODE_PROOF_ANY_DIGEST)", async () => {
    const c = await hostCluster();
    const n2 = c.nodes[1]?.name as string;
    const conf = (r as LiveRoot).layout.nodeServerConf(n2);
    // Control: the control host cannot read node 2's log or store (another host's disk), and node 2 writes its log.
    const logDir = dirname((r as LiveRoot).layout.nodeLogFile(n2));
    const [cmd, ...pre] = via(1);
    expect(spawnSync(cmd as string, [...pre, "ls", "-A", logDir], { env: hostsEnv, encoding: "utf8" }).stdout).toBe("");
    expect(readFileSync((r as LiveRoot).layout.nodeLogFile(n2), "utf8").length).toBeGreaterThan(0);
    const pollers = await pollEveryHost(c, await addWithCred("theta"));
    const before = readFileSync(conf); // what node 2 runs now: theta admitted
    const gate = join(dirname((r as LiveRoot).root), `gate-bytes-${Date.now()}`);
    // Host 2's agent again, parked after its second rename: its first round re-proves node 2 (a new agent proves the server it finds), the second answers the removal's ask.
    const agent = await restartAgent(c, 2, { COTAL_FAILPOINT: `node-renamed#2:barrier:${gate}:2` });
    const running = onHost(1, ["space", "rm", "theta", "--yes"], 180_000);
    try {
      await barrierReached(gate, "host 2's agent parked after renaming the removal's list for node 2", 60_000);
      expect(readFileSync(conf).equals(before)).toBe(false); // the claim's bytes, renamed by node 2's agent
      writeFileSync(conf, before); // node 2's file changes under its agent before the reload: it loads these
      releaseBarrier(gate);
      const res = await running;
      const at = Date.now();
      expect(res.code, res.stderr).toBe(0);
      // The agent refused its own first load (VARZ names other bytes) and answered the ask only after loading the claim's bytes.
      expect(agent.out()).toMatch(/did not prove the writer's asked list \(unproven[^\n]*not the bytes renamed for it/);
      expect(agent.out()).toMatch(/not the bytes renamed for it[\s\S]*applying the writer's ask/);
      await noneAdmittedAfter(pollers, at, "theta, reported removed after node 2 first loaded other bytes");
      await expectAllClean();
      await appsKeepWriting("node 2's other bytes under its agent");
    } finally {
      releaseBarrier(gate);
      await restartAgent(c, 2, {}, setupEnv);
    }
  });

  it("limits across the hosts: a 2 KiB publish by kappa goes through on every host, then `space limits kappa --max-payload 1K` and no host takes one", async () => {
    const c = await hostCluster();
    const subject = (spaceTemplate("kappa").streams[0]?.subjects[0] ?? "").replace(">", "probe");
    const pollers = await pollEveryHost(c, await addWithCred("kappa"), [subject, "2048"]); // positive control: 2 KiB under the default 1 MiB
    const lim = await onHost(1, ["space", "limits", "kappa", "--max-payload", "1K"]);
    const done = Date.now();
    expect(lim.code, lim.stderr).toBe(0);
    await noneAdmittedAfter(pollers, done, "kappa's 2 KiB publish under --max-payload 1K");
    await expectAllClean();
    await appsKeepWriting("space limits kappa");
  });

  it("backup and restore across the hosts: zeta's data, backed up live through the control host, restored over zeta with --replace; alpha writes throughout", async () => {
    const c = await hostCluster();
    const zetaCreds = readFileSync(await addWithCred("zeta", "app"), "utf8");
    // zeta's own application (on host 3) writes some data, then stops: what the backup must carry
    const zetaApp = await appOnHost(3, c.nodes, zetaCreds, "zeta", "nats.js");
    await until("zeta's application wrote 20 KV values", () => (zetaApp.report.kvPuts >= 20 ? true : undefined), 30_000, 100);
    const wrote = await zetaApp.stop();
    const usage = async (): Promise<number> => {
      const info = await onHost(1, ["space", "info", "zeta", "--json"]);
      expect(info.code, info.stderr).toBe(0);
      const report = JSON.parse(info.stdout) as { usage: { read: boolean; reason?: string }; limits: { field: string; used: number | null }[] };
      expect(report.usage.read, report.usage.reason).toBe(true);
      return report.limits.find((l) => l.field === "disk")?.used ?? 0;
    };
    const before = await usage();
    expect(before, "zeta stores what its application wrote").toBeGreaterThan(0);
    const out = join(dirname((r as LiveRoot).root), "zeta-backup");
    const backup = await onHost(1, ["space", "backup", "zeta", "--out", out]);
    expect(backup.code, backup.stderr).toBe(0);
    const verify = await onHost(1, ["backup", "verify", out]);
    expect(verify.code, verify.stderr).toBe(0);
    const restore = await onHost(1, ["space", "restore", "zeta", "--from", out, "--replace", "--yes", "--json"], 180_000);
    expect(restore.code, `${restore.stdout}\n${restore.stderr}`).toBe(0);
    // What the server holds after the restore (the restore reads it back), against what zeta's application
    // was acknowledged: every publish and every KV write (history 5, at most two writes a key here).
    const held = Object.fromEntries((JSON.parse(restore.stdout) as { streams: { name: string; messages: number }[] }).streams.map((x) => [x.name, x.messages]));
    const tpl = spaceTemplate("zeta");
    console.log(`[cluster-hosts] zeta: ${wrote.published} published, ${wrote.kvPuts} KV writes acknowledged; ${before} bytes before the backup; restored ${JSON.stringify(held)}`);
    // Nothing acknowledged is lost; a write whose ack (or read-back) failed may be there too.
    const events = held[tpl.streams[0]?.name as string] ?? -1;
    const values = held[`KV_${tpl.buckets[0]?.bucket as string}`] ?? -1;
    expect(events, "zeta's events after the restore").toBeGreaterThanOrEqual(wrote.published);
    expect(events).toBeLessThanOrEqual(wrote.published + wrote.publishFailures.length);
    expect(values, "zeta's KV values after the restore").toBeGreaterThanOrEqual(wrote.kvPuts);
    expect(values).toBeLessThanOrEqual(wrote.kvPuts + wrote.kvFailures.length);
    await expectAllClean();
    await appsKeepWriting("space backup zeta and space restore zeta --replace");
  });

  it("a node restart across the hosts: kill -9 of node 2, its agent brings it back held then applied; omega, removed before, is never admitted on any host", async () => {
    const c = await hostCluster();
    const pollers = await pollEveryHost(c, await addWithCred("omega"));
    const rm = await onHost(1, ["space", "rm", "omega", "--yes"]);
    const done = Date.now();
    expect(rm.code, rm.stderr).toBe(0);
    const rt = JSON.parse(readFileSync((r as LiveRoot).layout.runtimeFile, "utf8")) as { nodes?: { name: string; owner: { pid: number } }[] };
    const n2 = rt.nodes?.find((n) => n.name === c.nodes[1]?.name);
    expect(n2?.owner.pid).toBeGreaterThan(0);
    const agentSaid = c.agents[1]?.out().length ?? 0;
    process.kill(n2?.owner.pid as number, "SIGKILL");
    // host 2's agent restarts its node (every tenant held) and applies the record; the control host's status sees it clean
    await until("node 2 restarted held, then applied, by its agent", () => (/not running; starting it with every tenant held[\s\S]*applying \(/.test(c.agents[1]?.out().slice(agentSaid) ?? "") ? true : undefined), 90_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agent 2 said:\n${c.agents[1]?.out().slice(agentSaid)}`);
    });
    await until("every node clean", async () => {
      const st = JSON.parse((await onHost(1, ["status", "--json"])).stdout) as { broker: { nodes?: { state?: string }[] } };
      return (st.broker.nodes ?? []).every((n) => n.state === "clean") ? true : undefined;
    }, 60_000, 1_000);
    await noneAdmittedAfter(pollers, done, "omega, through node 2's restart");
    await appsKeepWriting("kill -9 of node 2 and its restart");
  });

  it("the agent renders from the public bucket: host 2's agent, restarted with the root's auth/ hidden (every account and operator seed), brings node 2 back from a kill -9 held then applied, as does a fresh agent reading the material through nodes 1 and 3; iota, added before, is admitted there again (red with NODE_MATERIAL_UNPUBLISHED)", async () => {
    const c = await hostCluster();
    const iota = await addWithCred("iota");
    const layout = (r as LiveRoot).layout;
    // What host 2 cannot read from here on: the root's auth/ (every tenant's, the authority's and the system
    // account's record with its seed, and the operator's), as on a node host that never held one. Its agent
    // connects as its own users (nodes/<node>/agent/), minted by the control host.
    expect(readdirSync(layout.authDir).filter((f) => /^account\..*\.json$/.test(f)).length, "the tenants' records to hide").toBeGreaterThanOrEqual(2);
    const records = [layout.authDir];
    const old = c.agents[1] as HostCluster["agents"][number];
    old.child.kill("SIGTERM");
    await until("host 2's first agent stopped", () => (old.child.exitCode !== null || old.child.signalCode !== null ? true : undefined), 30_000, 100);
    const agent = startOnHost(2, [...records.flatMap((f) => ["--hide", f]), process.execPath, cotalCliPath(), "--root", (r as LiveRoot).root, "node", "run", "--node", c.nodes[1]?.name ?? ""]);
    c.agents[1] = agent;
    await until("host 2's new agent serving", () => (/: serving generation \d+/.test(agent.out()) ? true : refusedToRender(agent.out())), 60_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agent 2 said:\n${agent.out()}`);
    });
    const rt = JSON.parse(readFileSync(layout.runtimeFile, "utf8")) as { nodes?: { name: string; owner: { pid: number } }[] };
    const n2 = rt.nodes?.find((n) => n.name === c.nodes[1]?.name)?.owner.pid as number;
    const said = agent.out().length;
    process.kill(n2, "SIGKILL");
    await until("node 2 restarted held, then applied, by the agent that reads no seed of the root", () => (/not running; starting it with every tenant held[\s\S]*applying \([\s\S]*: serving generation/.test(agent.out().slice(said)) ? true : refusedToRender(agent.out().slice(said))), 90_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agent 2 said:\n${agent.out().slice(said)}`);
    });
    // A fresh agent with node 2 down has read nothing yet: it reads the material through nodes 1 and 3 for its held boot.
    const again = (JSON.parse(readFileSync(layout.runtimeFile, "utf8")) as typeof rt).nodes?.find((n) => n.name === c.nodes[1]?.name)?.owner.pid as number;
    agent.child.kill("SIGTERM");
    await until("host 2's second agent stopped", () => (agent.child.exitCode !== null || agent.child.signalCode !== null ? true : undefined), 30_000, 100);
    process.kill(again, "SIGKILL");
    const fresh = startOnHost(2, [...records.flatMap((f) => ["--hide", f]), process.execPath, cotalCliPath(), "--root", (r as LiveRoot).root, "node", "run", "--node", c.nodes[1]?.name ?? ""]);
    c.agents[1] = fresh;
    await until("node 2 booted held from the material read through the other nodes, then applied", () => (/read the node material through the other nodes \(\d+ tenants\)[\s\S]*starting it with every tenant held[\s\S]*applying \([\s\S]*: serving generation/.test(fresh.out()) ? true : refusedToRender(fresh.out())), 90_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agent 2 said:\n${fresh.out()}`);
    });
    for (const out of [agent.out(), fresh.out()]) expect(out).not.toMatch(/render-refused|not published|lacks|renders from the root's records here/);
    // The tenant's side: iota (and alpha, below) admitted on node 2 again, after its restarts; every node clean from the control host.
    const pollers = await pollEveryHost(c, iota);
    for (const p of pollers) p.child.kill("SIGTERM");
    await until("every node clean", async () => {
      const st = JSON.parse((await onHost(1, ["status", "--json"])).stdout) as { broker: { nodes?: { state?: string }[] } };
      return (st.broker.nodes ?? []).every((n) => n.state === "clean") ? true : undefined;
    }, 60_000, 1_000);
    await appsKeepWriting("kill -9 of node 2 under an agent that reads no seed of the root");
  });

  it("the agent's own users: node 2's authority user reads the node material but cannot write it, the record, another node's proof or create a stream; its system user asks VARZ but not CONNZ; their files hold user keys only (red with AGENT_CREDS_UNRESTRICTED)", async () => {
    const c = await hostCluster();
    const layout = (r as LiveRoot).layout;
    const dir = layout.nodeAgentCredsDir(c.nodes[1]?.name ?? "");
    // Minted again by this cell's own `up` (the shared set-up's were minted without an ablation's switch).
    rmSync(dir, { recursive: true, force: true });
    const up = await onHost(1, ["up", "--detach"], 120_000);
    expect(up.code, up.stderr).toBe(0);
    expect(statSync(dir).mode & 0o777).toBe(0o700); // there again: this up minted them
    expect(readdirSync(dir).sort()).toEqual(["authority.creds", "system.creds"]);
    for (const f of readdirSync(dir)) {
      const text = readFileSync(join(dir, f), "utf8");
      expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
      expect(text, f).toMatch(/^SU[A-Z2-7]{56}$/m); // the user's own key: the scan's control
      expect(text, f).not.toMatch(/S[OANCPX][A-Z2-7]{55}/);
    }
    const n2 = c.nodes[1] as HostCluster["nodes"][number];
    const probe = (creds: string, ...pairs: string[]): Record<string, { outcome: string; detail: string }> => {
      const res = spawnSync("bash", [SCRIPT, "exec", "2", process.execPath, join(repoRoot(), "test-live", "fixtures", "perm-probe.mjs"), `nats://${n2.host}:${n2.port}`, join(dir, creds), ...pairs], { env: hostsEnv, encoding: "utf8", timeout: 60_000 });
      expect(res.status, res.stderr).toBe(0);
      return Object.fromEntries(res.stdout.trim().split("\n").map((l) => JSON.parse(l) as { subject: string; outcome: string; detail: string }).map((o) => [o.subject, o]));
    };
    const n3name = c.nodes[2]?.name as string;
    const auth = probe(
      "authority.creds",
      "$JS.API.STREAM.MSG.GET.KV_cotal_node_material", JSON.stringify({ last_by_subj: "$KV.cotal_node_material.index" }),
      "$KV.cotal_node_material.probe", "x",
      "$JS.API.STREAM.CREATE.cotal_probe", JSON.stringify({ name: "cotal_probe", subjects: ["cotal.probe"] }),
      // The record is the writer's alone: the agent writes its own proof key and no other (docs/cluster.md "The agent's proof on its own key").
      "$KV.cotal_broker_inventory.inventory", "{}",
      `$KV.cotal_node_proofs.node.${n3name}`, "{}",
    );
    console.log(`[cluster-hosts] node 2's authority user: ${JSON.stringify(auth)}`);
    expect(auth["$JS.API.STREAM.MSG.GET.KV_cotal_node_material"]?.outcome, "reads the material (the positive control)").toBe("answered");
    expect(auth["$JS.API.STREAM.MSG.GET.KV_cotal_node_material"]?.detail).toMatch(/"message"/);
    expect(auth["$KV.cotal_node_material.probe"]?.outcome, "writes the node material").toBe("denied");
    expect(auth["$JS.API.STREAM.CREATE.cotal_probe"]?.outcome, "creates a stream").toBe("denied");
    expect(auth["$KV.cotal_broker_inventory.inventory"]?.outcome, "writes the record").toBe("denied");
    expect(auth[`$KV.cotal_node_proofs.node.${n3name}`]?.outcome, "writes node 3's proof").toBe("denied");
    // Its own proof key it does write: host 2's agent put it there (the positive control), and status lays it over the record.
    const own = probe("authority.creds", "$JS.API.STREAM.MSG.GET.KV_cotal_node_proofs", JSON.stringify({ last_by_subj: `$KV.cotal_node_proofs.node.${n2.name}` }));
    expect(own["$JS.API.STREAM.MSG.GET.KV_cotal_node_proofs"]?.outcome, "reads node 2's proof").toBe("answered");
    const sys = probe("system.creds", "$SYS.REQ.SERVER.PING.VARZ", "", "$SYS.REQ.SERVER.PING.CONNZ", "");
    console.log(`[cluster-hosts] node 2's system user: ${JSON.stringify(Object.fromEntries(Object.entries(sys).map(([k, v]) => [k, v.outcome])))}`);
    expect(sys["$SYS.REQ.SERVER.PING.VARZ"]?.outcome, "asks VARZ (the positive control)").toBe("answered");
    expect(sys["$SYS.REQ.SERVER.PING.CONNZ"]?.outcome, "lists every tenant's connections").toBe("denied");
  });

  it("liveness by reachability: each node recorded as its own host's and judged by its answer; `cotal down` on the control host stops node 1 only, nodes 2 and 3 keep serving alpha (red with SIGNAL_NODES_ELSEWHERE)", async () => {
    await hostCluster();
    type Rt = { nodes?: { name: string; owner: { pid: number; host: string } }[] };
    const rt = JSON.parse(readFileSync((r as LiveRoot).layout.runtimeFile, "utf8")) as Rt;
    // Each host's cotal recorded its own node under its own hostname: the control host cannot judge nodes 2 and 3 by pid.
    expect(rt.nodes?.map((n) => n.owner.host)).toEqual([1, 2, 3].map((i) => `${PREFIX}-h${i}`));
    type St = { broker: { nodes?: { name: string; running: boolean; elsewhere?: string; agent?: { running: boolean | null; host?: string } }[] } };
    const seen = JSON.parse((await onHost(1, ["status", "--json"])).stdout) as St;
    expect(seen.broker.nodes?.map((n) => n.running)).toEqual([true, true, true]); // nodes 2 and 3: reached
    expect(seen.broker.nodes?.map((n) => n.elsewhere)).toEqual([undefined, `${PREFIX}-h2`, `${PREFIX}-h3`]);
    expect(seen.broker.nodes?.map((n) => [n.agent?.running, n.agent?.host])).toEqual([[true, `${PREFIX}-h1`], [null, `${PREFIX}-h2`], [null, `${PREFIX}-h3`]]);
    const remote = (rt.nodes ?? []).slice(1).map((n) => n.owner.pid);
    const down = await onHost(1, ["down"]);
    expect(down.code, down.stderr).toBe(0);
    // Nodes 2 and 3 were never signalled: the same servers run (the simulated hosts share one process table).
    for (const pid of remote) expect(alive(pid), `node server pid ${pid} was stopped by the control host's down:\n${down.stdout}`).toBe(true);
    expect(down.stdout).toMatch(/nodes \S+-n2, \S+-n3 on other hosts keep running/);
    const after = JSON.parse(readFileSync((r as LiveRoot).layout.runtimeFile, "utf8")) as Rt;
    expect(after.nodes?.map((n) => n.name)).toEqual(expect.arrayContaining((rt.nodes ?? []).slice(1).map((n) => n.name)));
    // alpha's applications keep writing through nodes 2 and 3 (a quorum of its R3 streams); node 1's agent keeps it down (run/down.json) until this up.
    await appsKeepWriting("cotal down on the control host");
    const up = await onHost(1, ["up", "--detach"], 120_000);
    expect(up.code, up.stderr).toBe(0);
    for (const pid of remote) expect(alive(pid)).toBe(true);
    await expectAllClean();
  });

  it("finding the nodes: the control host's run/broker.json records node 1 alone (as on hosts of their own); status reaches nodes 2 and 3 from settings.json, mu is added on every host and removed from every host, and up finds them running (red with UNRECORDED_NODES_IGNORED)", async () => {
    const c = await hostCluster();
    const layout = (r as LiveRoot).layout;
    // Hosts 2 and 3 keep their nodes and agents running: each agent finds its node in the node's own runtime record on its host
    // (nodes/<node>/runtime.json, written where the node started), not in the control host's run/broker.json.
    for (const n of c.nodes.slice(1)) expect((JSON.parse(readFileSync(layout.nodeRuntimeFile(n.name), "utf8")) as { nodes: { name: string }[] }).nodes.map((x) => x.name)).toEqual([n.name]);
    const original = readFileSync(layout.runtimeFile, "utf8");
    type Rt = { nodes: { name: string }[] };
    const rt = JSON.parse(original) as Rt;
    try {
      writeFileSync(layout.runtimeFile, JSON.stringify({ ...rt, nodes: rt.nodes.slice(0, 1) }));
      type St = { broker: { nodes?: { name: string; running: boolean; pid: number | null; elsewhere?: string; reachable: boolean | null; state?: string }[] } };
      const seen = JSON.parse((await onHost(1, ["status", "--json"])).stdout) as St;
      expect(seen.broker.nodes?.map((n) => [n.name, n.running, n.reachable]), JSON.stringify(seen).slice(0, 2_000)).toEqual(c.nodes.map((n) => [n.name, true, true]));
      expect(seen.broker.nodes?.slice(1).map((n) => [n.pid, n.elsewhere])).toEqual([[null, "(not recorded here)"], [null, "(not recorded here)"]]);
      // The tenant's side: mu admitted on every host (the writer asked nodes 2 and 3, found in the settings, of their agents) ...
      const pollers = await pollEveryHost(c, await addWithCred("mu"));
      const rm = await onHost(1, ["space", "rm", "mu", "--yes"]);
      const done = Date.now();
      expect(rm.code, rm.stderr).toBe(0);
      // ... and, removed, admitted on none.
      await noneAdmittedAfter(pollers, done, "mu, with nodes 2 and 3 known from settings.json alone");
      // `up` finds nodes 2 and 3 running by their answer too, and re-applies the record on all three.
      const up = await onHost(1, ["up", "--detach"], 120_000);
      expect(up.code, up.stderr).toBe(0);
      await expectAllClean();
      expect(JSON.parse(readFileSync(layout.runtimeFile, "utf8")) as Rt).toMatchObject({ nodes: [{ name: c.nodes[0]?.name }] }); // nothing invented was written
    } finally {
      writeFileSync(layout.runtimeFile, original);
    }
    await appsKeepWriting("verbs through nodes known from settings.json alone");
  });

  it("a node joins from a fourth host and leaves again: node add --host prints what its host runs, the printed agent there and the printed up here prove it, nu removed afterwards is admitted on none of the four hosts; then node forget once it is gone", async () => {
    const c = await hostCluster();
    const layout = (r as LiveRoot).layout;
    hosts("up", "4");
    const added = await onHost(1, ["node", "add", "--host", "10.99.0.4"], 60_000);
    expect(added.code, added.stderr).toBe(0);
    const printed = added.stdout.split("\n").filter((l) => l.startsWith("next: ")).map((l) => l.slice("next: ".length));
    const name = /added (\S+) at nats:\/\/10\.99\.0\.4:/.exec(added.stdout)?.[1] as string;
    console.log(`[cluster-hosts] node add: ${added.stdout.trim()}`);
    expect(printed).toEqual([expect.stringMatching(new RegExp(`^cotal --root \\S+ node run --node ${name} +# on 10\\.99\\.0\\.4`)), expect.stringMatching(/^cotal --root \S+ up --detach +#/)]);
    // Its host's files hold its agent's user keys and no seed of the root (the node runs no verb).
    const dir = layout.nodeDir(name);
    expect(scanForSeeds(dir).map((f) => f.slice(dir.length + 1)).sort()).toEqual(["agent/authority.creds", "agent/system.creds"]);
    // The printed lines, verbatim: the agent on host 4 (it starts node 4 held), then `up` here until it proves all four.
    const agent = printedProcess(printed[0] as string);
    const agent4 = startOnHost(4, agent.argv, { ...agent.env, COTAL_HOSTS_PREFIX: PREFIX });
    remoteNodeNames.push(name);
    const up = await until("the printed up, once node 4 runs", async () => {
      const res = await runPrinted(printed[1] as string, { COTAL_HOSTS_PREFIX: PREFIX }, 120_000, via(1));
      // Until node 4 runs; its agent holds the root's lock while it starts it (the simulated hosts share one root).
      return res.code === 0 ? res : /\[(broker-not-running|lock-held)\]/.test(res.stderr) ? undefined : res;
    }, 60_000, 1_000).catch((e: Error) => {
      throw new Error(`${e.message}: agent 4 said:\n${agent4.out()}`);
    });
    expect(up.code, `${up.stderr}\nagent 4 said:\n${agent4.out()}`).toBe(0);
    const st = JSON.parse((await onHost(1, ["status", "--json"])).stdout) as { broker: { nodes?: { name: string; state?: string }[] } };
    expect((st.broker.nodes ?? []).map((n) => [n.name, n.state])).toEqual([...c.nodes.map((n) => n.name), name].map((n) => [n, "clean"]));
    // nu, added and removed with four nodes: polled from every host, admitted on each (the control), then on none.
    const four = { ...c, nodes: [...c.nodes, { name, port: c.nodes[0]?.port as number, host: "10.99.0.4" }] };
    const pollers = await pollEveryHost(four, await addWithCred("nu"));
    const rm = await onHost(1, ["space", "rm", "nu", "--yes"]);
    const done = Date.now();
    expect(rm.code, rm.stderr).toBe(0);
    await noneAdmittedAfter(pollers, done, "nu, with node 4 joined");
    await appsKeepWriting("node 4's join");

    // Gone for good: its agent stopped, its server killed. Forget on the control host proves the three without it.
    agent4.child.kill("SIGTERM");
    await until("host 4's agent stopped", () => (agent4.child.exitCode !== null || agent4.child.signalCode !== null ? true : undefined), 30_000, 100);
    const rt = JSON.parse(readFileSync(layout.runtimeFile, "utf8")) as { nodes?: { name: string; owner: { pid: number } }[] };
    const pid = rt.nodes?.find((n) => n.name === name)?.owner.pid as number;
    expect(pid).toBeGreaterThan(1);
    process.kill(pid, "SIGKILL");
    await until("node 4's server gone", () => (alive(pid) ? undefined : true), 10_000, 100);
    const forget = await onHost(1, ["node", "forget", name, "--json"], 120_000);
    expect(forget.code, forget.stderr).toBe(0);
    expect((JSON.parse(forget.stdout) as { peer: string }).peer).toBe("removed");
    remoteNodeNames = remoteNodeNames.filter((n) => n !== name);
    hosts("up", "3");
    await expectAllClean();
    await appsKeepWriting("node 4 forgotten");
  });

  it("a gone writer's ask is no instruction: an ask left in the public bucket under a lease nobody holds, asking node 2 to run every tenant but xi, is not applied by node 2's agent; xi stays admitted on every host (red with NODE_ASK_UNFENCED)", async () => {
    const c = await hostCluster();
    const n2 = c.nodes[1] as HostCluster["nodes"][number];
    const layout = (r as LiveRoot).layout;
    const pollers = await pollEveryHost(c, await addWithCred("xi"));
    const others = (JSON.parse((await onHost(1, ["space", "list", "--json"])).stdout) as { spaces: { name: string }[] }).spaces.map((s) => s.name).filter((s) => s !== "xi");
    expect(others).toContain("alpha");
    // Host 2's agent again, in the cell's own environment (an ablation's switch bites here), serving before the forged ask.
    const agent = await restartAgent(c, 2, {});
    const conf = readFileSync(layout.nodeServerConf(n2.name));
    const said = agent.out().length;
    const [cmd, ...pre] = via(1);
    const forged = spawnSync(cmd as string, [...pre, process.execPath, join(repoRoot(), "test-live", "fixtures", "forge-ask.mjs"), (r as LiveRoot).root, `nats://${c.nodes[0]?.host}:${c.nodes[0]?.port}`, n2.name, "3", ...others], { env: hostsEnv, encoding: "utf8", timeout: 30_000 });
    expect(forged.status, forged.stderr).toBe(0);
    const at = Date.now();
    await sleep(8_000); // four rounds of node 2's agent
    for (const p of pollers) p.child.kill("SIGTERM");
    await sleep(300);
    const after = attemptsOf(pollers[1]?.out() ?? "").filter((a) => a.at >= at);
    console.log(`[cluster-hosts] xi on host 2 after the forged ask: ${after.length} attempts, ${after.filter((a) => a.ok).length} admitted`);
    expect(after.length, "host 2 polled after the ask").toBeGreaterThan(2);
    expect(after.filter((a) => !a.ok).map((a) => a.why), "xi refused on host 2 after a gone writer's ask").toEqual([]);
    expect(agent.out().slice(said)).not.toMatch(/applying the writer's ask/);
    expect(readFileSync(layout.nodeServerConf(n2.name)).equals(conf), "node 2's config renamed after a gone writer's ask").toBe(true);
    // The next writer's ask replaces it: xi removed through it from every host.
    const rm = await onHost(1, ["space", "rm", "xi", "--yes"]);
    expect(rm.code, rm.stderr).toBe(0);
    await expectAllClean();
    await restartAgent(c, 2, {}, setupEnv);
    await appsKeepWriting("a gone writer's ask");
  });

  it("a node directory of its own: `node bundle` on the control host writes what host 2 keeps (no seed of the root); node 2 moves there with its store, its printed agent runs with the shared root hidden and the control host never sees that directory; omicron is added and removed through node 2's answers, polled from every host", async () => {
    const c = await hostCluster();
    const layout = (r as LiveRoot).layout;
    const root = (r as LiveRoot).root;
    const n2 = c.nodes[1]?.name as string;
    const dir = join(dirname(root), `own-${n2}`);
    const b = await onHost(1, ["node", "bundle", "--node", n2, "--out", dir]);
    expect(b.code, b.stderr).toBe(0);
    const printed = b.stdout.split("\n").filter((l) => l.startsWith("next: ")).map((l) => l.slice("next: ".length));
    expect(printed).toEqual([expect.stringMatching(new RegExp(`^cotal --root ${dir} node run --node ${n2} +# on 10\\.99\\.0\\.2`))]);
    expect(scanForSeeds(dir).map((f) => f.slice(dir.length + 1)).sort(), "seeds in the bundle").toEqual([`nodes/${n2}/agent/authority.creds`, `nodes/${n2}/agent/system.creds`]);
    // Node 2 stops on the shared root (its agent, then its server), and its store moves with it: its host's disk.
    const old = c.agents[1] as HostCluster["agents"][number];
    old.child.kill("SIGTERM");
    await until("host 2's agent stopped", () => (old.child.exitCode !== null || old.child.signalCode !== null ? true : undefined), 30_000, 100);
    const pid = (JSON.parse(readFileSync(layout.nodeRuntimeFile(n2), "utf8")) as { nodes: { owner: { pid: number } }[] }).nodes[0]?.owner.pid as number;
    process.kill(pid, "SIGTERM");
    await until("node 2's server stopped", () => (alive(pid) ? undefined : true), 30_000, 100);
    cpSync(layout.nodeStoreDir(n2), join(dir, "nodes", n2, "store"), { recursive: true });
    controlHidden.push(dir); // the control host's verbs run with it hidden: nothing of it is read there
    const run = printedProcess(printed[0] as string);
    const agent = startOnHost(2, ["--hide", root, ...run.argv], { ...run.env, COTAL_HOSTS_PREFIX: PREFIX });
    c.agents[1] = agent;
    await until("node 2 started from its own directory, applied and serving", () => (/starting it with every tenant held[\s\S]*: serving generation/.test(agent.out()) ? true : refusedToRender(agent.out())), 120_000, 250).catch((e: Error) => {
      throw new Error(`${e.message}: agent 2 said:\n${agent.out()}`);
    });
    const own = JSON.parse(readFileSync(join(dir, "nodes", n2, "runtime.json"), "utf8")) as { nodes: { configPath: string }[] };
    expect(own.nodes[0]?.configPath).toBe(join(dir, "nodes", n2, "server.conf"));
    // The tenant's side: omicron admitted on every host, then, removed, on none.
    const pollers = await pollEveryHost(c, await addWithCred("omicron"));
    const rm = await onHost(1, ["space", "rm", "omicron", "--yes"]);
    const done = Date.now();
    expect(rm.code, `${rm.stderr}\nagent 2 said:\n${agent.out()}`).toBe(0);
    await noneAdmittedAfter(pollers, done, "omicron, with node 2 on a directory of its own");
    expect(agent.out()).toMatch(/applying the writer's ask/);
    await expectAllClean();
    await appsKeepWriting("node 2 moved to a directory of its own");
  });

  it("three hosts from scratch, each with a directory of its own (docs/cluster.md \"Deploying on three hosts\"): the control host creates the root and bundles nodes 2 and 3; each host runs its printed agent from its own directory with the root hidden, the control host's up seeds through their answers; pi is added and removed, polled from every host, and no node directory holds a seed", async () => {
    await hostCluster(); // the hosts are up
    const own = await liveRoot("cotal-own-");
    const base = dirname(own.root);
    const dirs = [join(base, "host2"), join(base, "host3")];
    const agents: { child: ChildProcess; out: () => string }[] = [];
    const control = { root: own.root, hide: dirs };
    try {
      // 1. The control host (host 1): the root, node 1 started there; nodes 2 and 3 named with their hosts.
      const created = await onHost(1, ["up", "--cluster", "3", "--tenant-replicas", "3", "--detach", "--port", String(own.port), "--node-hosts", HOSTS.join(",")], 90_000, {}, setupEnv, control);
      expect(created.code, created.stderr).toBe(6);
      const nodes = (JSON.parse(readFileSync(own.layout.settingsFile, "utf8")) as { cluster: { nodes: { name: string; port: number; host: string }[] } }).cluster.nodes;
      // 2. Node 1's agent beside it; a directory for each other host, then (here: the same path, seen by that host alone) its printed agent.
      const printed: string[] = [];
      for (const [i, dir] of dirs.entries()) {
        const n = nodes[i + 1]?.name as string;
        const b = await onHost(1, ["node", "bundle", "--node", n, "--out", dir], 60_000, {}, setupEnv, control);
        expect(b.code, b.stderr).toBe(0);
        const line = b.stdout.split("\n").find((l) => l.startsWith("next: "))?.slice("next: ".length) ?? "";
        expect(line).toMatch(new RegExp(`^cotal --root ${dir} node run --node ${n} +# on 10\\.99\\.0\\.${i + 2}`));
        printed.push(line);
      }
      agents.push(startOnHost(1, [...dirs.flatMap((d) => ["--hide", d]), process.execPath, cotalCliPath(), "--root", own.root, "node", "run", "--node", nodes[0]?.name ?? ""], setupEnv));
      for (const [i, dir] of dirs.entries()) {
        const run = printedProcess(printed[i] as string);
        agents.push(startOnHost(i + 2, ["--hide", own.root, ...dirs.filter((d) => d !== dir).flatMap((d) => ["--hide", d]), ...run.argv], { ...run.env, COTAL_HOSTS_PREFIX: PREFIX }));
      }
      await until("nodes 2 and 3 started held by their agents, from the material their directories were bundled with", () => (agents.slice(1).every((a) => /starting it with every tenant held/.test(a.out())) ? true : undefined), 60_000, 250).catch((e: Error) => {
        throw new Error(`${e.message}: agents said:\n${agents.map((a) => a.out()).join("\n---\n")}`);
      });
      // 3. Back on the control host: up seeds the record through the agents' answers.
      const up = await until("the control host's up, once the nodes form their cluster", async () => {
        const res = await onHost(1, ["up", "--detach"], 120_000, {}, setupEnv, control);
        return res.code === 0 ? res : /\[(inventory-unreachable|broker-unreachable|lock-held)\]/.test(res.stderr) ? undefined : res;
      }, 120_000, 2_000);
      expect(up.code, `${up.stderr}\nagents said:\n${agents.map((a) => a.out()).join("\n---\n")}`).toBe(0);
      for (const a of agents.slice(1)) expect(a.out()).toMatch(/applying the writer's ask \(generation 1/);
      // The tenant's side: pi admitted on every host, then, removed, on none.
      const add = await onHost(1, ["space", "add", "pi"], 90_000, {}, setupEnv, control);
      expect(add.code, add.stderr).toBe(0);
      const cred = await onHost(1, ["space", "creds", "pi", "--user", "u", "--json"], 90_000, {}, setupEnv, control);
      expect(cred.code, cred.stderr).toBe(0);
      const pollers = await pollEveryHost({ nodes, agents }, (JSON.parse(cred.stdout) as { path: string }).path);
      const rm = await onHost(1, ["space", "rm", "pi", "--yes"], 90_000, {}, setupEnv, control);
      const done = Date.now();
      expect(rm.code, rm.stderr).toBe(0);
      await noneAdmittedAfter(pollers, done, "pi, on three hosts with directories of their own");
      const st = JSON.parse((await onHost(1, ["status", "--json"], 90_000, {}, setupEnv, control)).stdout) as { broker: { nodes?: { state?: string }[] } };
      expect((st.broker.nodes ?? []).map((n) => n.state)).toEqual(["clean", "clean", "clean"]);
      for (const [i, dir] of dirs.entries()) {
        const n = nodes[i + 1]?.name as string;
        expect(existsSync(own.layout.nodeServerConf(n)), "the control host wrote no config for a node elsewhere").toBe(false);
        expect(scanForSeeds(dir).map((f) => f.slice(dir.length + 1)).sort(), `seeds under ${dir}`).toEqual([`nodes/${n}/agent/authority.creds`, `nodes/${n}/agent/system.creds`]);
      }
    } finally {
      for (const a of agents) a.child.kill("SIGTERM");
      await sleep(500);
      await killServersUnder(base);
      await own.dispose();
    }
    await appsKeepWriting("a second cluster on the same hosts");
  });

  it("no seed in a node's state directory: nodes 2 and 3's config, store, log and agent state after every cell hold none but their agents' own two user keys; the root's auth/ does (the scan's positive control)", async () => {
    const c = await hostCluster();
    const root = (r as LiveRoot).root;
    const seeds = (dir: string): string[] => scanForSeeds(dir).map((f) => f.slice(root.length + 1));
    expect(seeds(join(root, "auth")).length, "the scan finds the root's own seeds").toBeGreaterThan(0);
    for (const n of c.nodes.slice(1)) {
      const dir = (r as LiveRoot).layout.nodeDir(n.name);
      expect(readdirSync(dir)).toEqual(expect.arrayContaining(["server.conf", "store", "log", "agent"]));
      // Its agent's two users (a user key each, no account or operator seed: "the agent's own users") and nothing else.
      const rel = (f: string): string => f.slice(dir.length + 1);
      expect(scanForSeeds(dir).map(rel).sort(), `seeds under ${dir}`).toEqual(["agent/authority.creds", "agent/system.creds"]);
    }
    // A node's directory of its own (the cell before), with its node's config, store and log in it by now: the same two.
    for (const own of controlHidden) {
      const node = (JSON.parse(readFileSync(join(own, "node.json"), "utf8")) as { node: string }).node;
      expect(readdirSync(join(own, "nodes", node))).toEqual(expect.arrayContaining(["server.conf", "store", "log", "agent"]));
      expect(scanForSeeds(own).map((f) => f.slice(own.length + 1)).sort(), `seeds under ${own}`).toEqual([`nodes/${node}/agent/authority.creds`, `nodes/${node}/agent/system.creds`]);
    }
  });
});
