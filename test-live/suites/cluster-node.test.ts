import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CredentialPoller, harnessTeardown, monotonicMs, type PollReport } from "@cotal/harness";
import type { UpResult } from "@cotal/core";
import { connectAsAccount, readRuntime } from "@cotal/core/broker";
import { loadAuthorityAccount } from "@cotal/core/root";
import type { LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { alive, disposeClusterRoots, nodesOf, pastRejoin, throughNodeKill, upCluster } from "../fixtures/cluster.js";
import { startAgent, type RunningAgent } from "../fixtures/node-agent.js";
import { connects, credsText, statusOf, untilStatus } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import { barrierDir, releaseBarrier } from "../fixtures/barrier.js";
import { runPrinted } from "../fixtures/printed.js";

// `cotal node run` (docs/cluster.md "cotal node"): the per-host agent that keeps one node of a
// three-node cluster (real nats-servers on loopback) on the committed record without `cotal up`.
// Every cell has a positive control; a removed tenant's cred is polled continuously.

const agents: RunningAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await disposeClusterRoots();
});
afterAll(harnessTeardown);

async function upClusterNodes(): Promise<{ r: LiveRoot; up: UpResult; nodes: NonNullable<UpResult["nodes"]> }> {
  const { r, up } = await upCluster();
  expect(up.nodes).toHaveLength(3);
  return { r, up, nodes: up.nodes ?? [] };
}

function agent(r: LiveRoot, node: string, env: Record<string, string> = {}): RunningAgent {
  const a = startAgent(r, node, env);
  agents.push(a);
  return a;
}

const poller = (url: string, creds: string, name: string) => new CredentialPoller({ url, creds, maxDurationMs: 120_000, threads: 1, concurrency: 8, name }).start();

describe("cotal node run", () => {
  it("kill -9 of node 3 during an add, then the agent: it restarts node 3 with every tenant held (none admitted), applies, proves; beta connects on node 3 only after the apply", () =>
    cell("node agent: returning node after kill -9", async () => {
      const { r, nodes } = await upClusterNodes();
      const [n1, n2, n3] = nodes;
      if (!n1 || !n2 || !n3) throw new Error("three nodes expected");
      const add = await throughNodeKill(r, ["space", "add", "beta"], n3.pid);
      expect([0, 6], add.stderr).toContain(add.code);
      let st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
      expect(st.inventory?.generation).toBe(2);
      expect(nodesOf(st).map((n) => [n.running, n.appliedGeneration])).toEqual([[true, 2], [true, 2], [false, 1]]);
      const beta = await credsText(r, "beta");
      expect(await connects(n1.url, beta)).toBe(true); // positive control: beta is a live tenant

      // Polled from before node 3 exists again; the agent holds it in maintenance 3 s after its decision.
      const p = poller(n3.url, beta, "node-agent-n3");
      const a = agent(r, n3.name, { COTAL_FAILPOINT: "node-decided:sleep:3000" });
      const started = await a.line(/not running; starting it with every tenant held/);
      const applying = await a.line(/applying \(/, 60_000);
      await a.line(/serving generation 2/, 90_000);
      // One status read can miss node 3 on a loaded machine (its probe is bounded): wait for the condition, then assert on the last read.
      const caughtUp = (s: typeof st): boolean => [nodesOf(s)[2]?.running, nodesOf(s)[2]?.appliedGeneration, nodesOf(s)[2]?.behind].join() === "true,2,false";
      st = await untilStatus(r, caughtUp, 15_000).catch(() => statusOf(r));
      const me = nodesOf(st)[2];
      expect([me?.running, me?.appliedGeneration, me?.behind], `node 3 in status after the agent served generation 2: ${JSON.stringify(me)}\n${a.text()}`).toEqual([true, 2, false]);
      expect(me?.agent?.state).toBe("serving");
      expect(me?.agent?.generation).toBe(2);
      await p.waitForAttempt((x) => x.ok, { timeoutMs: 15_000 });
      const report: PollReport = await p.stop();
      // Node 3 answered in maintenance and refused beta (its first accepted connections), and admitted it only after the apply began.
      const refusedInMaintenance = report.attempts.filter((x) => !x.ok && x.startedAt >= started.at && x.endedAt <= applying.at && /maximum account active connections|authori/i.test(x.error ?? "")); // held: limits.conn 0 (broker/node-hold.ts)
      expect(refusedInMaintenance.length, JSON.stringify(report.errors)).toBeGreaterThan(0);
      // "within": an attempt that began before the agent stamped `applying` may be admitted by the reload
      // that follows the stamp (a loaded CI run saw one); only an admission wholly before it is a breach.
      expect(report.successesBetween(0, applying.at, "within"), `beta admitted on node 3 before the agent's apply (at ${applying.at}): ${JSON.stringify(report.attempts.filter((x) => x.ok && x.endedAt <= applying.at).slice(0, 3))}\n${a.text()}`).toBe(0);
      expect(report.successes).toBeGreaterThan(0);
      expect(await connects(n3.url, await credsText(r, "default"))).toBe(true);
      expect(a.child.exitCode).toBeNull(); // still watching
    }));

  it("a removal while the agent runs: the removed cred, polled on all three nodes, never connects after the commit; the agent follows to the new generation", () =>
    cell("node agent: removal while running", async () => {
      const { r, nodes } = await upClusterNodes();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const beta = await credsText(r, "beta");
      const n3 = nodes[2];
      if (!n3) throw new Error("no third node");
      const a = agent(r, n3.name);
      await a.line(/serving generation 2/, 60_000);
      const pollers = nodes.map((n) => poller(n.url, beta, `node-rm-${n.name}`));
      await Promise.all(pollers.map((q) => q.waitForAttempt((x) => x.ok, { timeoutMs: 15_000 }))); // positive control on every node
      const rm = await r.cotal(["space", "rm", "beta", "--yes"], { timeoutMs: 60_000 });
      const removedAt = monotonicMs();
      expect(rm.code, rm.stderr).toBe(0);
      await a.line(/serving generation 3/, 30_000);
      await new Promise((res) => setTimeout(res, 1_500));
      const reports = await Promise.all(pollers.map((q) => q.stop()));
      for (const [i, rep] of reports.entries()) {
        expect(rep.successes).toBeGreaterThan(0);
        expect(rep.successesBetween(removedAt, Number.POSITIVE_INFINITY, "within"), `node ${i + 1} admitted beta after the commit\n${a.text()}`).toBe(0);
        expect(rep.failuresBetween(removedAt, Number.POSITIVE_INFINITY)).toBeGreaterThan(0);
      }
      const st = await statusOf(r);
      expect(nodesOf(st).map((n) => n.appliedGeneration)).toEqual([3, 3, 3]);
      // SIGTERM stops the agent cleanly, not its node: the lease is free (a write goes through) and node 3 still serves.
      expect(await a.stop()).toBe(0);
      expect(alive(n3.pid)).toBe(true);
      expect((await r.cotal(["space", "add", "gamma"], { env: { COTAL_LEASE_WAIT_MS: "0" } })).code).toBe(0);
      expect(await connects(n3.url, await credsText(r, "default"))).toBe(true);
    }));

  it("SIGSTOP node 3, an add commits with it behind, SIGCONT: the running agent catches node 3 up without `cotal up`", () =>
    cell("node agent: SIGCONT catch-up", async () => {
      const { r, nodes } = await upClusterNodes();
      const n3 = nodes[2];
      if (!n3) throw new Error("no third node");
      const a = agent(r, n3.name);
      await a.line(/serving generation 1/, 60_000);
      process.kill(n3.pid, "SIGSTOP");
      let contAt = 0;
      try {
        // With node 3 stopped the R3 buckets may be electing a new leader: the add re-runs until the store answers.
        // On 2.9.10 beta's R1 streams may be placed on the stopped node: after the commit the add re-tries its
        // provisioning for its documented 60 s (CLUSTER_REJOIN_MS, docs/cluster.md) before it exits 6, so it gets 150 s.
        const add = await pastRejoin(r, ["space", "add", "beta"], undefined, {}, 150_000);
        // Committed; provisioning beta's streams may time out on a cluster with a stopped node (exit 6, `next: cotal up`).
        expect([0, 6], add.stderr).toContain(add.code);
        if (add.code === 6) expect(add.stderr).toMatch(/provisioning space beta failed/);
        expect(add.stderr).toContain(n3.name); // left behind, named
        const st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
        expect(st.inventory?.generation).toBe(2);
        expect(nodesOf(st)[2]?.behind).toBe(true);
      } finally {
        process.kill(n3.pid, "SIGCONT");
        contAt = monotonicMs();
      }
      const beta = await credsText(r, "beta");
      expect(await connects(nodes[0]?.url ?? "", beta)).toBe(true); // positive control on node 1
      const p = poller(n3.url, beta, "node-cont-n3");
      await p.waitForAttempt((x) => x.ok, { timeoutMs: 45_000 });
      const rep = await p.stop();
      const connectedAfter = (rep.firstSuccessAt ?? Number.POSITIVE_INFINITY) - contAt;
      expect(connectedAfter, a.text()).toBeLessThan(45_000);
      // Admission alone may come from the writer's SIGHUP, queued while node 3 was stopped, over the config it
      // renamed; the proof of generation 2 on node 3 is the agent's alone (no writer runs now).
      await a.line(/applying \(/, 45_000, contAt);
      await a.line(/serving generation 2/, 45_000, contAt);
      const st = await untilStatus(r, (s) => nodesOf(s)[2]?.appliedGeneration === 2, 20_000);
      expect(nodesOf(st)[2]?.behind).toBe(false);
      expect(nodesOf(st)[2]?.agent?.state).toBe("serving");
    }), 240_000);

  it("no quorum: node 3 alone stays in maintenance (a tenant is refused, the agent says why and `next:`); the others started, it applies and serves; a `down` with the three agents running keeps every node down until `up` (red with DOWN_WITHOUT_STOP_INTENT)", () =>
    cell("node agent: maintenance without quorum", async () => {
      const { r, nodes } = await upClusterNodes();
      const [n1, n2, n3] = nodes;
      if (!n1 || !n2 || !n3) throw new Error("three nodes expected");
      const def = await credsText(r, "default");
      expect((await r.cotal(["down"])).code).toBe(0);
      await until("every node stopped", async () => (nodes.every((n) => !alive(n.pid)) ? true : undefined), 15_000);

      const a3 = agent(r, n3.name);
      await a3.line(/starting it with every tenant held/, 30_000);
      const m = await a3.line(/^cotal node: .*: maintenance: no tenant admitted: /, 60_000);
      const idx = a3.lines.findIndex((l) => l === m);
      await until("the next: line", () => (a3.lines[idx + 1]?.text.match(/^\s+next: \S/) ? true : undefined), 5_000);
      const url = readRuntime(r.layout)?.nodes?.find((n) => n.name === n3.name)?.url;
      if (!url) throw new Error("node 3 not recorded");
      // Positive control: node 3 runs and admits the authority account (preloaded in maintenance) ...
      const nc = await connectAsAccount(url, loadAuthorityAccount(r.layout), { name: "control" });
      await nc.close();
      // ... and refuses the tenant.
      expect(await connects(url, def)).toBe(false);
      let st = await statusOf(r);
      expect(nodesOf(st).find((n) => n.name === n3.name)?.agent?.state).toBe("maintenance");
      // a second agent for node 3 is refused while a3 runs it, naming a3 (issue #28: one agent a node)
      const once = await r.cotal(["node", "run", "--node", n3.name, "--once"], { timeoutMs: 60_000 });
      expect(once.code, once.stderr).toBe(4);
      expect(once.stderr).toMatch(/\[lock-held\][\s\S]*next: /);
      expect(once.stderr).toContain(`pid ${a3.child.pid}`);

      const startedOthers = monotonicMs();
      agent(r, n1.name);
      agent(r, n2.name);
      await a3.line(/serving generation 1/, 90_000, startedOthers);
      expect(await connects(url, def)).toBe(true);
      st = await untilStatus(r, (s) => nodesOf(s).length === 3 && nodesOf(s).every((n) => n.agent?.state === "serving"), 60_000);
      expect(nodesOf(st).map((n) => [n.running, n.appliedGeneration])).toEqual([[true, 1], [true, 1], [true, 1]]);
      await downHoldsUnderAgents(r, def, agents.slice(-3));
    }));

  /**
   * `down` with every agent running (docs/cluster.md "cotal down holds"): each agent says `stopped` with
   * the `up` that undoes it, and starts nothing over several rounds; that `up` then meets no agent's lock.
   */
  async function downHoldsUnderAgents(r: LiveRoot, tenant: string, running: RunningAgent[]): Promise<void> {
    const downAt = monotonicMs();
    const down = await r.cotal(["down"]);
    expect(down.code, down.stderr).toBe(0);
    // A round in flight when its node stopped ends first (a store read bounded at 15 s): then the next one says stopped.
    for (const a of running) {
      const said = await a.line(/: stopped: stopped by cotal down at |not running; starting it with every tenant held/, 60_000, downAt);
      expect(said.text, "an agent started the node down stopped").toMatch(/: stopped: stopped by cotal down at /);
    }
    await new Promise((res) => setTimeout(res, 3_000)); // six rounds at --interval 500
    expect(readRuntime(r.layout)?.nodes ?? [], "a node started again after down").toEqual([]);
    expect(running.flatMap((a) => a.lines.filter((l) => l.at >= downAt && /starting it with every tenant held/.test(l.text)))).toEqual([]);
    const st = await statusOf(r);
    expect(nodesOf(st).map((n) => n.agent?.state)).toEqual(["stopped", "stopped", "stopped"]);
    const printed = nodesOf(st)[0]?.agent?.next ?? "";
    expect(printed).toBe(`cotal --root ${r.root} up --detach`);
    const upAt = monotonicMs();
    const up = await runPrinted(printed, {}, 120_000); // verbatim, from /
    expect(up.code, up.stderr).toBe(0);
    for (const a of running) await a.line(/serving generation 1/, 60_000, upAt);
    const url = readRuntime(r.layout)?.nodes?.[2]?.url;
    expect(url && (await connects(url, tenant))).toBe(true); // the tenant is back
  }

  // The barrier of a failpoint gives up after 30 s (packages/core/src/failpoints.ts); the agent's round then fails and
  // its next round decides again on what it reads, parking at the barrier again while the record is still stale.
  const BARRIER_GIVES_UP_MS = 30_000;
  it("lease rule: an agent that decided on a stale record before a removal applies only under the lease, after re-reading; the removed tenant never returns on node 3 (red with NODE_APPLY_UNFENCED)", () =>
    cell("node agent: fenced against a writer", async () => {
      const { r, nodes } = await upClusterNodes();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const beta = await credsText(r, "beta");
      const n3 = nodes[2];
      if (!n3) throw new Error("no third node");
      process.kill(n3.pid, "SIGKILL");
      await until("node 3 gone", async () => (!alive(n3.pid) ? true : undefined), 10_000);
      // The agent restarts node 3, reads generation 2 (beta listed) and decides to apply it, then parks before the
      // lease until the removal committed. (A 45 s sleep once held it there: the removal takes ~2 s, 25.7 s once under CI's load.)
      const gate = barrierDir(r, "agent");
      const a = agent(r, n3.name, { COTAL_FAILPOINT: `node-decided:barrier:${gate}:2` });
      await a.line(/applying \(/, 60_000);
      const url = readRuntime(r.layout)?.nodes?.find((n) => n.name === n3.name)?.url ?? n3.url;
      // Deleting beta's streams may time out while node 3 rejoins: the journaled re-run finishes it.
      const rm = await pastRejoin(r, ["space", "rm", "beta", "--yes"], /\[(inventory-unreachable|inventory-busy|broker-unreachable)\]/);
      const removedAt = monotonicMs();
      expect(rm.code, rm.stderr).toBe(0);
      const p = poller(url, beta, "node-fence-n3");
      await p.waitForAttempt(() => true, { timeoutMs: 15_000 }); // polling before the agent goes on
      const releasedAt = monotonicMs();
      releaseBarrier(gate);
      // Past the agent's apply (or its decision that none is needed).
      await a.line(/serving generation 3/, 60_000, releasedAt);
      // The decision the release let go: made on the stale record, before the commit, and still parked then.
      const decided = a.lines.filter((l) => /applying \(/.test(l.text) && l.at <= releasedAt).at(-1);
      expect(decided?.at ?? Number.POSITIVE_INFINITY, `the agent decided before the removal committed:\n${a.text()}`).toBeLessThan(removedAt);
      expect(releasedAt - (decided?.at ?? 0), `the decision was still parked at the release:\n${a.text()}`).toBeLessThan(BARRIER_GIVES_UP_MS);
      await new Promise((res) => setTimeout(res, 2_000));
      const rep = await p.stop();
      expect(rep.failures).toBeGreaterThan(0);
      expect(rep.successes, `beta admitted on node 3 after its removal:\n${a.text()}`).toBe(0);
      expect(await connects(url, await credsText(r, "default"))).toBe(true); // control: node 3 serves
      const st = await statusOf(r);
      expect(nodesOf(st).find((n) => n.name === n3.name)?.appliedGeneration).toBe(3);
    }), 150_000);

  it("lease rule, a writer mid-removal: an agent released while a writer holding the lease is paused after node 3's reload waits for it, then re-reads; beta never returns on node 3 (red with NODE_APPLY_UNFENCED)", () =>
    cell("node agent: waits for a writer's lease", async () => {
      const { r, nodes } = await upClusterNodes();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const beta = await credsText(r, "beta");
      const def = await credsText(r, "default");
      const n3 = nodes[2];
      if (!n3) throw new Error("no third node");
      expect(await connects(n3.url, beta)).toBe(true); // positive control: beta is admitted on node 3 before the removal
      // A fresh agent re-applies the committed list (beta, default) once: hold it after that decision.
      const agentGate = join(r.root, "..", `gate-agent-${Date.now()}`);
      const a = agent(r, n3.name, { COTAL_FAILPOINT: `node-decided:barrier:${agentGate}:2` });
      await until("the agent at node-decided", () => (existsSync(agentGate) && readdirSync(agentGate).length > 0 ? true : undefined), 60_000);
      // The writer: every node reloaded without beta and proven, the lease held, not committed.
      const writerGate = join(r.root, "..", `gate-writer-${Date.now()}`);
      const rm = r.cotal(["space", "rm", "beta", "--yes"], { env: { COTAL_FAILPOINT: `after-proof:barrier:${writerGate}:2` }, timeoutMs: 90_000 });
      await until("the writer at after-proof", () => (existsSync(writerGate) && readdirSync(writerGate).length > 0 ? true : undefined), 25_000);
      const p = poller(n3.url, beta, "node-wait-n3");
      writeFileSync(join(agentGate, "test"), "");
      await new Promise((res) => setTimeout(res, 3_000)); // the agent, released, must now wait for the lease
      const heldOff = monotonicMs();
      writeFileSync(join(writerGate, "test"), "");
      const done = await rm;
      expect(done.code, done.stderr).toBe(0);
      await a.line(/serving generation 3/, 60_000);
      await new Promise((res) => setTimeout(res, 1_500));
      const rep = await p.stop();
      expect(rep.failuresBetween(0, heldOff)).toBeGreaterThan(0);
      expect(rep.successes, `beta admitted on node 3 during or after its removal:\n${a.text()}`).toBe(0);
      expect(await connects(n3.url, def)).toBe(true); // control: node 3 serves
    }));

  it("pending-claim rule: a removal refused with node 3 killed leaves its claim; the agent brings node 3 back without the removed tenant and records its partial proof (red with NODE_ADMITS_PENDING_REMOVES)", () =>
    cell("node agent: pending removal", async () => {
      const { r, nodes } = await upClusterNodes();
      expect((await r.cotal(["space", "add", "beta"])).code).toBe(0);
      const beta = await credsText(r, "beta");
      const def = await credsText(r, "default"); // before the removal's journal blocks other verbs
      const n3 = nodes[2];
      if (!n3) throw new Error("no third node");
      const rm = await throughNodeKill(r, ["space", "rm", "beta", "--yes"], n3.pid);
      expect(rm.code, rm.stderr).toBe(7); // cluster-unproven: the claim stays
      let st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
      expect(st.inventory?.pending?.removes).toEqual(["beta"]);
      expect(nodesOf(st).map((n) => n.stillAdmits)).toEqual([[], [], ["beta"]]);

      const p = poller(n3.url, beta, "node-pending-n3"); // from before node 3 exists again
      const a = agent(r, n3.name);
      await a.line(/serving generation 2: generation 3 is claimed and not committed: runs generation 2 without beta/, 90_000);
      expect(await connects(n3.url, def)).toBe(true); // control: node 3 serves the kept tenant
      await new Promise((res) => setTimeout(res, 1_500));
      const rep = await p.stop();
      expect(rep.failures).toBeGreaterThan(0);
      // Seen once in CI (not understood yet): say when each admission began and ended against the agent's stamped lines.
      const admitted = rep.attempts.filter((x) => x.ok).map((x) => `admitted by ${x.server ?? "(no server name)"}: began ${Math.round(x.startedAt)}, ended ${Math.round(x.endedAt)}`);
      expect(rep.successes, `beta admitted on node 3 while its removal was pending:\n${admitted.join("\n")}\n${a.lines.map((l) => `${Math.round(l.at)} ${l.text}`).join("\n")}`).toBe(0);
      st = await statusOf(r);
      expect(st.inventory?.generation).toBe(2); // the agent never resolves a claim
      expect(nodesOf(st).map((n) => n.stillAdmits), a.text()).toEqual([[], [], []]); // its partial proof is in the claim

      // The printed re-run completes the removal on every node; the agent follows.
      const fin = await pastRejoin(r, ["space", "rm", "beta", "--yes"]);
      expect(fin.code, fin.stderr).toBe(0);
      await a.line(/serving generation 3$/, 30_000);
    }));
});
