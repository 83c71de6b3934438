import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harnessTeardown } from "@cotal/harness";
import type { StatusReport, UpResult } from "@cotal/core";
import { loadBrokerTrust, loadSpaceAccount } from "@cotal/core/root";
import { spaceTemplate, templateStreamNames } from "@cotal/core/provision";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectCreds } from "../fixtures/nats.js";
import { parseJson, snapshotTree, type LiveRoot } from "../fixtures/live-root.js";
import { cell } from "../fixtures/matrix.js";
import { ok, seedSpace, spaceFacts, upJson } from "../fixtures/space-data.js";
import { connects, credsText, disposeLiveRoots, statusOf, trackedRoot, untilStatus } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import { startRedis, startWorker } from "../fixtures/jobs.js";
import { startDashboard } from "../fixtures/dashboard.js";
import { alive, pausedAt } from "../fixtures/cluster.js";
import { accountLimitsOn, askServer, disposeClusterRoot, streamReplicasOf, systemCreds, upClusterRoot } from "../fixtures/cluster-root.js";
import { VERSION_DEPENDENT } from "../fixtures/tags.js";

// Every verb on a cluster root (docs/cluster.md "Verbs on a cluster root"): the ones that work are run
// against three real nats-servers with a positive control on every node; the offline ones refuse
// `cluster-offline` (exit 6) with a runnable `next:` and change nothing. One root per describe.

afterAll(harnessTeardown);

const nodesOf = (st: StatusReport) => st.broker.nodes ?? [];

/** The root's files but the nodes' stores and logs, which a running server writes by itself. */
function rootFiles(r: LiveRoot): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshotTree(r.root)).filter(([k]) => !/^nodes\/[^/]+\/(store|log)\//.test(k)));
}

describe("verbs on a running cluster root (tenant streams R3)", () => {
  let r: LiveRoot;
  let up: UpResult;
  let beta: string;
  beforeAll(async () => {
    ({ r, up } = await upClusterRoot("cotal-cverbs-live-", ["--tenant-replicas", "3"]));
    ok(await r.cotal(["space", "add", "beta"], { timeoutMs: 60_000 }));
    beta = await credsText(r, "beta");
  }, 120_000);
  afterAll(async () => {
    await disposeClusterRoot(r);
    await disposeLiveRoots();
  });
  const urls = () => (up.nodes ?? []).map((n) => n.url);

  it("space limits: the re-signed account JWT is what every node serves, proven on every node", () =>
    cell("cluster verbs: space limits on every node", async () => {
      const account = loadSpaceAccount(r.layout, "beta")?.publicKey as string;
      const sys = systemCreds(loadBrokerTrust(r.layout).system, "ACCOUNTZ");
      // Control: every node serves the template's limit before the change.
      for (const url of urls()) expect((await accountLimitsOn(url, sys, account)).conn, url).toBe(128);
      const res = ok(await r.cotal(["space", "limits", "beta", "--max-conns", "7", "--max-streams", "9", "--json"], { timeoutMs: 60_000 }));
      const generation = parseJson<{ generation: number }>(res).generation;
      for (const url of urls()) {
        const limits = await accountLimitsOn(url, sys, account);
        expect([limits.conn, limits.streams], url).toEqual([7, 9]);
      }
      const st = await statusOf(r);
      expect(nodesOf(st).map((n) => [n.appliedGeneration, n.state])).toEqual([[generation, "clean"], [generation, "clean"], [generation, "clean"]]);
      expect(await connects(up.url, beta)).toBe(true);
    }));

  it("space info: a tenant's connections are summed over every node (one on node 2 and one on node 3 count two); its KV write shows as disk", () =>
    cell("cluster verbs: space info sums every node", async () => {
      const usage = async (): Promise<Record<string, number | null>> => {
        const info = parseJson<{ usage: { read: boolean; reason?: string }; limits: { field: string; used: number | null }[] }>(ok(await r.cotal(["space", "info", "beta", "--json"], { timeoutMs: 30_000 })));
        expect(info.usage.read, info.usage.reason).toBe(true);
        return Object.fromEntries(info.limits.map((l) => [l.field, l.used]));
      };
      const before = await usage();
      const [, n2, n3] = up.nodes ?? [];
      const ncs = [await connectCreds(n2?.url as string, beta), await connectCreds(n3?.url as string, beta)];
      try {
        const kv = await new Kvm(ncs[1] as NatsConnection).open(spaceTemplate("beta").buckets[0]?.bucket as string);
        await kv.put("info.k", new TextEncoder().encode("x".repeat(512)));
        // CONNZ reaches every node in its own time: read until both connections are counted (a node left out counts one)
        const after = await until("both connections counted", async () => {
          const u = await usage();
          return (u.conns ?? 0) - (before.conns ?? 0) === 2 ? u : undefined;
        }, 15_000, 500);
        expect(after.disk ?? 0).toBeGreaterThan(before.disk ?? 0);
      } finally {
        await Promise.all(ncs.map((nc) => nc.close()));
      }
    }));

  it("broker reconcile: the report is clean on the cluster; --adopt-disk --yes runs through the saga on every node", () =>
    cell("cluster verbs: broker reconcile", async () => {
      const res = await r.cotal(["broker", "reconcile", "--json"]);
      expect(res.code).toBe(3); // direction-required: the report is printed and nothing changes
      const doc = parseJson<{ report: { state: string; diskOnly: string[]; kvOnly: string[] }; error: { code: string } }>(res);
      expect(doc.error.code).toBe("direction-required");
      expect([doc.report.state, doc.report.diskOnly, doc.report.kvOnly]).toEqual(["clean", [], []]);
      const before = (await statusOf(r)).inventory?.generation as number;
      const adopt = parseJson<{ outcome: string; saga: { generation: number } }>(ok(await r.cotal(["broker", "reconcile", "--adopt-disk", "--yes", "--json"], { timeoutMs: 60_000 })));
      expect([adopt.outcome, adopt.saga.generation]).toEqual(["reconciled", before + 1]);
      const st = await statusOf(r);
      expect([st.state, st.inventory?.spaces]).toEqual(["clean", ["beta", "default"]]);
      expect(nodesOf(st).map((n) => n.appliedGeneration)).toEqual([before + 1, before + 1, before + 1]);
      for (const url of urls()) expect(await connects(url, beta), url).toBe(true);
    }));

  it("online backup, then restore --replace of an R1 artifact: the data comes back and every stream is R3 with two followers", VERSION_DEPENDENT, () =>
    cell("cluster verbs: online backup and restore at the root's replicas", async () => {
      // The artifact comes from a single broker (R1 streams): the restore must re-create them at the cluster root's R3.
      const single = await trackedRoot("cotal-cverbs-single-");
      const sUp = await upJson(single, ["--space", "beta"]);
      const sBeta = await credsText(single, "beta");
      await seedSpace(sUp.url, sBeta, "beta", 60, 20);
      const want = await spaceFacts(sUp.url, sBeta);
      const artifact = join(single.root, "..", "beta-r1.bak");
      ok(await single.cotal(["space", "backup", "beta", "--out", artifact], { timeoutMs: 60_000 }));
      const manifest = JSON.parse(readFileSync(join(artifact, "manifest.json"), "utf8")) as { streams: { name: string; config: { num_replicas?: number } }[] };
      expect(manifest.streams.map((s) => s.config.num_replicas)).toEqual(manifest.streams.map(() => 1));

      // The cluster's own online backup of beta: quiesced on every node while its streams are read, lifted on every node after.
      await seedSpace(up.url, beta, "beta", 5, 0);
      const own = join(r.root, "..", "beta-r3.bak");
      const paused = await pausedAt(r, ["space", "backup", "beta", "--quiesce", "--out", own], "backup-quiesced");
      for (const url of urls()) expect(await connects(url, beta), `beta quiesced on ${url}`).toBe(false);
      paused.release();
      ok(await paused.run);
      expect(existsSync(join(own, "manifest.json"))).toBe(true);
      for (const url of urls()) expect(await connects(url, beta), `beta lifted on ${url} after the backup`).toBe(true);

      const res = ok(await r.cotal(["space", "restore", "beta", "--from", artifact, "--rebind-account", "--replace", "--yes", "--json"], { timeoutMs: 90_000 }));
      expect(parseJson<{ mode: string }>(res).mode).toBe("online");
      const n2 = up.nodes?.[1];
      if (!n2) throw new Error("no second node");
      // The restored R3 consumer is assigned through the meta leader: node 2 may list it a moment later.
      const got = await until("the restored data on node 2", async () => {
        const f = await spaceFacts(n2.url, beta);
        return JSON.stringify(f) === JSON.stringify(want) ? f : undefined;
      }, 20_000).catch(async () => spaceFacts(n2.url, beta));
      expect(got).toEqual(want);
      for (const s of templateStreamNames("beta")) {
        const got = await until(`${s} R3 with two followers`, async () => {
          const x = await streamReplicasOf(n2.url, beta, s);
          return x.peers === 2 ? x : undefined;
        }, 20_000);
        expect(got, s).toEqual({ numReplicas: 3, peers: 2 });
      }
      for (const url of urls()) expect(await connects(url, beta), `beta lifted on ${url}`).toBe(true);
      await single.cotal(["down"]);
    }));

  it("an online backup killed while beta is quiesced: beta stays refused on every node until `cotal up`, which lifts it on every node", () =>
    cell("cluster verbs: up lifts a dead backup's quiesce", async () => {
      const out = join(r.root, "..", "beta-killed.bak");
      const cut = await r.cotal(["space", "backup", "beta", "--quiesce", "--out", out], { env: { COTAL_FAILPOINT: "backup-quiesced:exit" } });
      expect(cut.code, cut.stderr).toBe(86);
      expect((JSON.parse(readFileSync(r.layout.journalFile, "utf8")) as { op: string }).op).toBe("quiesce");
      for (const url of urls()) expect(await connects(url, beta), `beta still quiesced on ${url}`).toBe(false);
      const again = ok(await r.cotal(["up", "--detach"], { timeoutMs: 90_000 }));
      expect(again.stdout + again.stderr).toMatch(/lifted the quiesce of space beta/);
      expect(existsSync(r.layout.journalFile), "the quiesce entry is cleared").toBe(false);
      for (const url of urls()) expect(await connects(url, beta), `beta lifted on ${url}`).toBe(true);
    }));

  it("queued verbs through `cotal worker`: space add --queue and space rm --queue apply to every node; jobs status and the dashboard read the root", () =>
    cell("cluster verbs: queued add and rm through the worker", async () => {
      const redis = await startRedis();
      const worker = startWorker("cli", { root: r.root, redisUrl: redis.url });
      try {
        await worker.ready();
        const env = { REDIS_URL: redis.url };
        ok(await r.cotal(["space", "add", "gamma", "--queue"], { env, timeoutMs: 60_000 }));
        let st = await statusOf(r);
        const g = st.inventory?.generation as number;
        expect(st.inventory?.spaces).toContain("gamma");
        expect(nodesOf(st).map((n) => [n.appliedGeneration, n.state])).toEqual([[g, "clean"], [g, "clean"], [g, "clean"]]);
        const gamma = await credsText(r, "gamma");
        for (const url of urls()) expect(await connects(url, gamma), `gamma on ${url}`).toBe(true);
        ok(await r.cotal(["space", "rm", "gamma", "--yes", "--queue"], { env, timeoutMs: 60_000 }));
        st = await statusOf(r);
        expect(st.inventory?.spaces).not.toContain("gamma");
        expect(nodesOf(st).map((n) => n.appliedGeneration)).toEqual([g + 1, g + 1, g + 1]);
        for (const url of urls()) expect(await connects(url, gamma), `gamma removed on ${url}`).toBe(false);
        // Completed jobs are not kept: nothing is left waiting or failed, and the worker is attached to both queues.
        const jobs = parseJson<{ queues: { type: string; workers: number; counts: Record<string, number> }[] }>(ok(await r.cotal(["jobs", "status", "--json"], { env })));
        for (const type of ["space-add", "space-rm"]) {
          const q = jobs.queues.find((x) => x.type === type);
          expect([q?.workers, q?.counts.waiting, q?.counts.active, q?.counts.failed], type).toEqual([1, 0, 0, 0]);
        }
        // The dashboard reads the same status: the tenant page renders the cluster root's record.
        const dash = await startDashboard(r.root, env);
        try {
          const page = await fetch(`${dash.url}/tenants`);
          const html = await page.text();
          expect(page.status).toBe(200);
          expect(html).toContain("beta");
          expect(html).toContain("clean");
        } finally {
          await dash.stop();
        }
      } finally {
        await worker.stop();
        await redis.stop();
      }
    }));

  it("down --preserve-state refuses cluster-offline: nothing stops, no cut is journaled", () =>
    cell("cluster verbs: down --preserve-state refused", async () => {
      const before = rootFiles(r);
      const res = await r.cotal(["down", "--preserve-state"]);
      expect(res.code, res.stderr).toBe(6);
      expect(res.stderr).toMatch(/\[cluster-offline\]/);
      expect(res.stderr).toMatch(/next: cotal (--root \S+ )?space list {3}# back up each space online/);
      expect(rootFiles(r)).toEqual(before);
      expect((up.nodes ?? []).every((n) => alive(n.pid))).toBe(true);
      expect(existsSync(r.layout.journalFile)).toBe(false);
    }));

  it("status per node: a killed node is `stopped` on its own line and named in the state; node 1 killed, the record is still read through another node", () =>
    cell("cluster verbs: status per node", async () => {
      let st = await statusOf(r);
      expect(nodesOf(st).map((n) => n.state)).toEqual(["clean", "clean", "clean"]);
      const [n1, , n3] = up.nodes ?? [];
      if (!n1 || !n3) throw new Error("no nodes");
      process.kill(n3.pid, "SIGKILL");
      await until("node 3 gone", () => (!alive(n3.pid) ? true : undefined), 10_000);
      st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
      expect(nodesOf(st).map((n) => n.state)).toEqual(["clean", "clean", "stopped"]);
      expect(st.why).toContain(`${n3.name} stopped`);
      process.kill(n1.pid, "SIGKILL");
      await until("node 1 gone", () => (!alive(n1.pid) ? true : undefined), 10_000);
      // The cluster runs while node 2 does (docs/cluster.md "Verbs through any node"): status goes through it and reads the R3 record there.
      st = await untilStatus(r, (s) => s.inventory !== null || s.inventoryError !== undefined, 30_000);
      expect(st.broker.running).toBe(true);
      expect(st.broker.through).toBe(up.nodes?.[1]?.name);
      expect([nodesOf(st)[0]?.state, nodesOf(st)[2]?.state]).toEqual(["stopped", "stopped"]);
      // Node 2 alone holds no quorum of the R3 tenant streams: once their leaders step down (sooner on a loaded
      // machine) it is STREAMS UNSERVED, which is what its tenants see (no write acknowledged); "unknown" when
      // the R3 record cannot be read through it.
      expect(st.inventory ? ["clean", "STREAMS UNSERVED"] : ["unknown"]).toContain(nodesOf(st)[1]?.state);
      expect(st.why).toContain(`${n1.name} stopped`);
      expect(st.why).toContain(`${n3.name} stopped`);
      // The way out `status` prints: up restarts both and applies the committed record on each.
      // While the restarted nodes rejoin, JetStream may answer "temporarily unavailable" (retriable): `up` again until it answers.
      await until("up past the rejoin", async () => {
        const res = await r.cotal(["up", "--detach"], { timeoutMs: 90_000 });
        if (res.code !== 0 && /\[(inventory-unreachable|inventory-busy|broker-unreachable)\]/.test(res.stderr)) return undefined;
        return ok(res);
      }, 60_000, 1_000);
      st = await untilStatus(r, (s) => nodesOf(s).every((n) => n.state === "clean"), 30_000);
      expect(st.state).toBe("clean");
    }));
});

describe("offline verbs on a stopped cluster root refuse cluster-offline before any write", () => {
  let r: LiveRoot;
  let up: UpResult;
  let artifact: string;
  let generation: number;
  beforeAll(async () => {
    ({ r, up } = await upClusterRoot("cotal-cverbs-down-"));
    ok(await r.cotal(["space", "add", "beta"], { timeoutMs: 60_000 }));
    artifact = join(r.root, "..", "beta.bak");
    ok(await r.cotal(["space", "backup", "beta", "--out", artifact], { timeoutMs: 60_000 }));
    generation = (await statusOf(r)).inventory?.generation as number;
    ok(await r.cotal(["down"]));
    await until("every node stopped", () => ((up.nodes ?? []).every((n) => !alive(n.pid)) ? true : undefined), 15_000);
  }, 120_000);
  afterAll(() => disposeClusterRoot(r));

  const refusals: [string, string[], RegExp][] = [
    ["space rm", ["space", "rm", "beta", "--yes"], /next: cotal up --detach --root \S+ && cotal (--root \S+ )?space rm beta --yes\b/],
    ["broker reconcile", ["broker", "reconcile"], /next: cotal up --detach --root \S+ && cotal (--root \S+ )?broker reconcile/],
    ["broker reconcile --adopt-disk", ["broker", "reconcile", "--adopt-disk", "--yes"], /next: cotal up --detach --root \S+ && cotal (--root \S+ )?broker reconcile --adopt-disk --yes/],
    ["space backup", ["space", "backup", "beta", "--out", "OUT"], /next: cotal up --detach --root \S+ && cotal (--root \S+ )?space backup beta --out/],
    ["space restore", ["space", "restore", "beta", "--from", "ARTIFACT"], /next: cotal up --detach --root \S+ && cotal (--root \S+ )?space restore beta --from/],
    ["clean orphan-streams", ["clean", "orphan-streams", "--yes"], /next: cotal (--root \S+ )?broker reconcile/],
  ];
  for (const [name, args, next] of refusals) {
    it(`${name} on the stopped cluster: exit 6 cluster-offline, a runnable next, nothing changed`, () =>
      cell(`cluster verbs: offline ${name} refused`, async () => {
        const argv = args.map((a) => (a === "OUT" ? join(r.root, "..", `out-${Date.now()}`) : a === "ARTIFACT" ? artifact : a));
        const before = snapshotTree(r.root);
        const res = await r.cotal(argv, { timeoutMs: 60_000 });
        expect(res.code, res.stderr).toBe(6);
        expect(res.stderr).toMatch(/\[cluster-offline\]/);
        expect(res.stderr).toMatch(next);
        expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
        expect(snapshotTree(r.root), "a refusal writes nothing").toEqual(before);
        expect(existsSync(r.layout.storeDir), "no private broker opened a store of its own").toBe(false);
        for (const a of argv.filter((x) => x.includes(`${join(r.root, "..")}/out-`))) expect(existsSync(a), "no artifact directory").toBe(false);
      }));
  }

  for (const [name, args] of [["space add", ["space", "add", "delta"]], ["space limits --max-conns", ["space", "limits", "beta", "--max-conns", "9"]]] as const) {
    it(`${name} on the stopped cluster: exit 6 broker-not-running, next starts it and re-runs, nothing changed`, () =>
      cell(`cluster verbs: offline ${name} refused`, async () => {
        const before = snapshotTree(r.root);
        const res = await r.cotal([...args]);
        expect(res.code, res.stderr).toBe(6);
        expect(res.stderr).toMatch(/\[broker-not-running\]/);
        expect(res.stderr).toMatch(new RegExp(`next: cotal up --detach --root \\S+ && cotal (--root \\S+ )?${args.join(" ")}`));
        expect(snapshotTree(r.root)).toEqual(before);
      }));
  }

  it("the read verbs work on the stopped cluster from disk and change nothing: status, space list, space limits, clean restore-attempt, space creds", () =>
    cell("cluster verbs: read verbs on the stopped cluster", async () => {
      const before = snapshotTree(r.root);
      const st = await statusOf(r);
      expect([st.state, st.broker.running, nodesOf(st).map((n) => n.state)]).toEqual(["stopped", false, ["stopped", "stopped", "stopped"]]);
      const list = parseJson<{ spaces: { name: string; state: string }[] }>(ok(await r.cotal(["space", "list", "--json"])));
      expect(list.spaces.map((x) => x.name)).toEqual(["beta", "default"]);
      const limits = parseJson<{ quota: { conns: number } }>(ok(await r.cotal(["space", "limits", "beta", "--json"])));
      expect(limits.quota.conns).toBe(128);
      const clean = parseJson<{ outcome: string }>(ok(await r.cotal(["clean", "restore-attempt", "--attempt", "nope", "--json"])));
      expect(clean.outcome).toBe("absent");
      expect(snapshotTree(r.root), "the read verbs wrote nothing").toEqual(before);
      const out = join(r.root, "..", "beta-offline.creds");
      ok(await r.cotal(["space", "creds", "beta", "--user", "offline", "--out", out]));
      expect(readFileSync(out, "utf8")).toContain("BEGIN NATS USER JWT");
    }));

  it("after every refusal the cluster comes up at the same generation with beta (the refusals' positive control)", () =>
    cell("cluster verbs: offline refusals changed nothing", async () => {
      ok(await r.cotal(["up", "--detach"], { timeoutMs: 90_000 }));
      const st = await untilStatus(r, (s) => s.inventory !== null, 30_000);
      expect([st.state, st.inventory?.generation, st.inventory?.spaces]).toEqual(["clean", generation, ["beta", "default"]]);
      // The printed way out works: the same removal on the running cluster.
      ok(await r.cotal(["space", "rm", "beta", "--yes"], { timeoutMs: 60_000 }));
      expect((await statusOf(r)).inventory?.spaces).toEqual(["default"]);
      ok(await r.cotal(["down"]));
    }));
});

describe("up --rotate-sys on a cluster root", () => {
  let r: LiveRoot;
  let up: UpResult;
  beforeAll(async () => {
    ({ r, up } = await upClusterRoot("cotal-cverbs-rotate-"));
    ok(await r.cotal(["space", "add", "beta"], { timeoutMs: 60_000 }));
  }, 120_000);
  afterAll(() => disposeClusterRoot(r));

  it("refused broker-running while any node runs (node 1 killed, nodes 2 and 3 up): nothing rotates", () =>
    cell("cluster verbs: rotate-sys with nodes up refused", async () => {
      const n1 = up.nodes?.[0];
      if (!n1) throw new Error("no first node");
      process.kill(n1.pid, "SIGKILL");
      await until("node 1 gone", () => (!alive(n1.pid) ? true : undefined), 10_000);
      const trust = readFileSync(r.layout.brokerFile, "utf8");
      const res = await r.cotal(["up", "--rotate-sys", "--detach"], { timeoutMs: 60_000 });
      expect(res.code, res.stderr).toBe(6);
      expect(res.stderr).toMatch(/\[broker-running\]/);
      expect(res.stderr).toContain(up.nodes?.[1]?.name as string);
      expect(res.stderr).toMatch(/next: cotal (--root \S+ )?down && cotal (--root \S+ )?up --rotate-sys/);
      expect(readFileSync(r.layout.brokerFile, "utf8"), "the system account is not rotated").toBe(trust);
      expect(existsSync(r.layout.journalFile)).toBe(false);
      ok(await r.cotal(["down"]));
    }));

  it("with every node stopped: the system account rotates and every node boots on it; the retired one is refused everywhere", () =>
    cell("cluster verbs: rotate-sys on every node", async () => {
      // beta's data and the record as they stand before, the cluster up again for it; a system
      // account's raft groups live under its name (docs/cluster.md "The system account on a cluster").
      const n2 = (await upJson(r)).nodes?.[1]?.url as string;
      const beta = await credsText(r, "beta");
      const nc = await connectCreds(n2, beta);
      try {
        await (await new Kvm(nc).open(spaceTemplate("beta").buckets[0]?.bucket as string)).put("before.rotate", "kept");
      } finally {
        await nc.close();
      }
      const facts = await spaceFacts(n2, beta);
      const generation = (await statusOf(r)).inventory?.generation;
      expect(Object.values(facts.streams).some((s) => s.messages > 0), "beta holds data (the control)").toBe(true);
      await r.cotal(["down"]);
      const retired = loadBrokerTrust(r.layout).system;
      const res = ok(await r.cotal(["up", "--rotate-sys", "--detach", "--json"], { timeoutMs: 90_000 }));
      const doc = parseJson<UpResult & { rotated: { systemAccount: string; retiredSystemAccount: string; reminted: string[]; carried?: string[] } }>(res);
      expect(doc.rotated.retiredSystemAccount).toBe(retired.publicKey);
      expect(doc.rotated.reminted).toEqual(["beta", "default"]);
      const current = loadBrokerTrust(r.layout).system;
      expect(current.publicKey).toBe(doc.rotated.systemAccount);
      expect(existsSync(r.layout.storeDir), "no phantom store for a lease").toBe(false);
      const fresh = systemCreds(current, "VARZ");
      const old = systemCreds(retired, "VARZ");
      for (const n of doc.nodes ?? []) {
        expect(readFileSync(r.layout.nodeServerConf(n.name), "utf8")).toContain(`system_account: ${current.publicKey}`);
        const varz = await askServer<{ system_account?: string }>(n.url, fresh, "VARZ");
        expect(varz.system_account, n.name).toBe(current.publicKey);
        await expect(askServer(n.url, old, "VARZ"), `the retired system account on ${n.name}`).rejects.toThrow();
      }
      const st = await untilStatus(r, (s) => nodesOf(s).every((n) => n.state === "clean"), 30_000);
      expect(st.inventory?.spaces).toEqual(["beta", "default"]);
      const betaCreds = await credsText(r, "beta");
      for (const n of doc.nodes ?? []) expect(await connects(n.url, betaCreds), `beta on ${n.name}`).toBe(true);
      // Nothing lost: every node's raft state was carried to the new account, so no stream was found orphaned and deleted.
      expect(doc.rotated.carried).toEqual((doc.nodes ?? []).map((n) => n.name));
      expect(await spaceFacts(doc.nodes?.[0]?.url as string, betaCreds), "beta's streams and consumers after the rotation").toEqual(facts);
      expect(st.inventory?.generation, "the record kept (not seeded again)").toBe(generation);
    }));
});
