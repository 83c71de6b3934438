/**
 * Bulk onboarding of N tenants end to end (trusted, provisioned, a cred of a sample connects), in one run:
 *   (a) cotal, group commit: one spaceAdd with every name
 *   (q) cotal through the BullMQ queue (@cotal/jobs: enqueue + an in-process CotalWorker, throwaway redis-server)
 *   (b) cotal, one saga per tenant, capped at --per-tenant and extrapolated linearly to N
 *   (c) the peer: nats-server with the `full` resolver receiving the same account JWTs (cotal's default
 *       quota as limits, so JetStream is enabled the same way) over $SYS.REQ.CLAIMS.UPDATE, then the
 *       same provisioning (provisionSpace, same pool width) and the same creds check
 * The peer runs with cotal's JetStream durability (issue 35): `sync_interval: always` where cotal's broker
 * has it (2.10.0 on), nats-server's default where it has not. `--peer-sync default` runs it with
 * nats-server's default instead (the unfair peer of earlier runs), `--peer-sync same,default` both.
 * --runs R repeats the group-commit, peer and queue arms R times back to back, the order rotated
 * from run to run, and prints each run's wall ratios: group ÷ peer (target ≤ 1.0×) and queue ÷
 * group (target ≤ 1.15×).
 *
 *   node packages/bench/dist/onboarding.js [--n 1000] [--per-tenant 100] [--runs 1] [--skip queue,per-tenant,peer] [--peer-sync same|default|same,default]
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { SurvivorWatcher } from "@cotal/harness";
import { createLogger, enqueueJobs, trackJobs, CotalWorker, workerConfig } from "@cotal/jobs";
import { mapPool, spaceAdd, type SagaTiming } from "@cotal/core";
import { connectWithCreds } from "@cotal/core/broker";
import { PROVISION_CONCURRENCY, provisionSpace } from "@cotal/core/provision";
import type { AccountRecord } from "@cotal/core/root";
import { mintUserCreds } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench, runCleanup } from "./lib/cleanup.js";
import { names, reloadCount, spaceCreds, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { startRedis } from "./lib/redis.js";
import { cotalSyncsAlways, jetStreamSyncNote, startPeerBroker } from "./lib/peer-broker.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const N = args.int("n", 1000);
const perTenantCap = Math.min(N, args.int("per-tenant", 100));
/** spaceAdd provisions through a pool of at most PROVISION_CONCURRENCY (paced by the broker's fds, never narrower here); the peer gets the same width. */
const PEER_PROVISION_CONCURRENCY = PROVISION_CONCURRENCY;
const runs = args.int("runs", 1);
const skip = new Set(args.str("skip", "").split(",").filter(Boolean));
const peerSync = new Set(args.str("peer-sync", "same").split(",").filter(Boolean));
for (const v of peerSync) if (v !== "same" && v !== "default") throw new Error(`--peer-sync takes same, default or same,default (got ${v})`);
/** cotal's broker's JetStream sync on this server, which the fair peer copies. */
const COTAL_SYNC_ALWAYS = cotalSyncsAlways();
/** The queue arm's worker settings; absent flags keep the worker's own defaults (WORKER_DEFAULTS). */
const flag = (name: string): number | undefined => (args.int(name, -1) === -1 ? undefined : args.int(name, -1));
const [qConcurrency, qBatch, qWait] = [flag("queue-concurrency"), flag("queue-batch"), flag("queue-wait-ms")];
const queueOverrides = {
  ...(qConcurrency !== undefined ? { concurrency: qConcurrency } : {}),
  batch: { ...(qBatch !== undefined ? { maxSize: qBatch } : {}), ...(qWait !== undefined ? { maxWaitMs: qWait } : {}) },
};

interface Arm {
  arm: string;
  tenants: number;
  wallMs: number;
  trustMs: number | null;
  provisionMs: number | null;
  connectMs: number;
  reloads: number;
  survivorDisconnects: number;
  survivorMaxGapMs: number;
  extrapolated?: { fromTenants: number; wallMs: number; trustMs: number; reloads: number; how: string };
  notes: string[];
}

const s = (x: number | null | undefined): string => (x === null || x === undefined ? "n/a" : `${(x / 1000).toFixed(2)} s`);

/** Proves sample tenants' user creds connect and answer a round trip (the first, middle and last of the batch). */
async function sampleConnects(url: string, creds: (i: number) => string, n: number): Promise<number> {
  const t0 = performance.now();
  for (const i of new Set([0, Math.floor(n / 2), n - 1])) {
    const nc = await connectWithCreds(url, creds(i), { name: "bench-sample", reconnect: false });
    try {
      await nc.flush();
    } finally {
      await nc.close();
    }
  }
  return performance.now() - t0;
}

async function cotalGroupCommit(): Promise<Arm> {
  const br = await startCotalRoot("onboard-group");
  const watcher = await SurvivorWatcher.start({ url: br.started.url, creds: spaceCreds(br.layout, "default") });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const reloads0 = reloadCount(br.layout);
  const list = names("t", 0, N);
  const steps: Partial<Record<SagaTiming, number>> = {};
  let releaseAt = 0;
  const t0 = performance.now();
  const res = await spaceAdd({
    root: br.root,
    names: list,
    onTiming: (step, d) => {
      steps[step] = (steps[step] ?? 0) + d;
      if (step === "release") releaseAt = performance.now();
    },
  });
  const t1 = performance.now();
  const connectMs = await sampleConnects(br.started.url, (i) => spaceCreds(br.layout, list[i] as string), list.length);
  const t2 = performance.now();
  await watcher.stop();
  if (res.added.length !== N || res.provisioned.length !== N) throw new Error(`group commit added ${res.added.length}, provisioned ${res.provisioned.length}`);
  // what the peer is made to match: read back from the config cotal rendered, not assumed
  const syncAlways = readFileSync(br.layout.serverConf, "utf8").includes("sync_interval: always");
  if (syncAlways !== COTAL_SYNC_ALWAYS) throw new Error(`cotal's server.conf has sync_interval always: ${syncAlways}, expected ${COTAL_SYNC_ALWAYS} for this nats-server`);
  return {
    arm: "cotal: group commit (one spaceAdd)",
    tenants: N,
    wallMs: t2 - t0,
    trustMs: releaseAt - t0,
    provisionMs: t1 - releaseAt,
    connectMs,
    reloads: reloadCount(br.layout) - reloads0,
    survivorDisconnects: watcher.count("disconnect"),
    survivorMaxGapMs: round(watcher.maxReconnectGapMs()),
    notes: [
      `saga steps (ms): ${Object.entries(steps).map(([k, v]) => `${k} ${round(v ?? 0)}`).join(", ")}`,
      `fsyncs: ${jetStreamSyncNote(syncAlways)}; cotal's own files (each space's record and seeds, the rendered config, the journal) written atomically and fsynced`,
    ],
  };
}

async function cotalQueue(): Promise<Arm> {
  const redisUrl = await startRedis();
  const br = await startCotalRoot("onboard-queue");
  const watcher = await SurvivorWatcher.start({ url: br.started.url, creds: spaceCreds(br.layout, "default") });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const reloads0 = reloadCount(br.layout);
  const cfg = workerConfig(br.root, { ...queueOverrides, redisUrl, http: undefined }, {});
  const batches: string[] = [];
  // The worker's JSON log lines, read back: each group commit is one `event: "batch"` line.
  let conflicts = 0;
  let reprovisioned = 0;
  let batchMs = 0; // time inside the batches, from each batch line's own figure
  const logger = createLogger({ format: "json", name: "bench", destination: { write: (line: string) => {
    const e = JSON.parse(line) as { event?: string; msg?: string; ms?: number };
    if (e.event === "batch" && e.msg) {
      batches.push(e.msg);
      batchMs += e.ms ?? 0;
    }
    // The saga's notices: a conflict re-decides; a provisioning retried after a reload dropped it.
    if (e.event === "saga-notice" && e.msg?.startsWith("saga: conflict")) conflicts++;
    if (e.event === "saga-notice" && / again \(attempt /.test(e.msg ?? "")) reprovisioned++;
  } } });
  const worker = await CotalWorker.start({ ...cfg, logger });
  onCleanup("close the worker", () => worker.close());
  const list = names("q", 0, N);
  const t0 = performance.now();
  const enq = await enqueueJobs({ type: "space-add", root: br.root, redisUrl, items: list.map((name) => ({ name })) });
  const tEnq = performance.now();
  const tracked = await trackJobs({ redisUrl, queue: enq.queue, ids: enq.jobs.map((j) => j.id), pollMs: 50, timeoutMs: 30 * 60_000 });
  const t1 = performance.now();
  if (tracked.failed.length > 0) throw new Error(`${tracked.failed.length} queued job(s) failed: ${tracked.failed[0]?.reason}`);
  const connectMs = await sampleConnects(br.started.url, (i) => spaceCreds(br.layout, list[i] as string), list.length);
  const t2 = performance.now();
  await watcher.stop();
  return {
    arm: "cotal: queue (BullMQ, in-process worker)",
    tenants: N,
    wallMs: t2 - t0,
    trustMs: null,
    provisionMs: null,
    connectMs,
    reloads: reloadCount(br.layout) - reloads0,
    survivorDisconnects: watcher.count("disconnect"),
    survivorMaxGapMs: round(watcher.maxReconnectGapMs()),
    notes: [
      `worker defaults: concurrency ${cfg.concurrency}, batch ≤ ${cfg.batch.maxSize} within ${cfg.batch.maxWaitMs} ms`,
      `enqueue ${round(tEnq - t0)} ms, jobs done ${round(t1 - t0)} ms, ${batches.length} batch(es), ${conflicts} conflict(s), ${reprovisioned} provisioning retr${reprovisioned === 1 ? "y" : "ies"}`,
      // What the queue adds to the batches themselves (enqueue, the worker's claim, completion, tracking): the disk's swing is in the batch, not here.
      `queue overhead ${round(t1 - t0 - batchMs)} ms (jobs done ${round(t1 - t0)} ms − ${round(batchMs)} ms inside the batch${batches.length === 1 ? "" : "es, summed"})`,
      "trust and provisioning are not separable from the outside here (each batch is one spaceAdd: trust then provisioning)",
    ],
  };
}

async function cotalPerTenant(): Promise<Arm> {
  const br = await startCotalRoot("onboard-single");
  const watcher = await SurvivorWatcher.start({ url: br.started.url, creds: spaceCreds(br.layout, "default") });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const reloads0 = reloadCount(br.layout);
  const list = names("s", 0, perTenantCap);
  let trust = 0;
  let provision = 0;
  const t0 = performance.now();
  for (const name of list) {
    let releaseAt = 0;
    const a = performance.now();
    await spaceAdd({ root: br.root, names: [name], onTiming: (step) => (step === "release" ? (releaseAt = performance.now()) : undefined) });
    const b = performance.now();
    trust += releaseAt - a;
    provision += b - releaseAt;
  }
  const t1 = performance.now();
  const connectMs = await sampleConnects(br.started.url, (i) => spaceCreds(br.layout, list[i] as string), list.length);
  const t2 = performance.now();
  await watcher.stop();
  const reloads = reloadCount(br.layout) - reloads0;
  const f = N / perTenantCap;
  return {
    arm: `cotal: one saga per tenant (${perTenantCap} measured)`,
    tenants: perTenantCap,
    wallMs: t2 - t0,
    trustMs: trust,
    provisionMs: provision,
    connectMs,
    reloads,
    survivorDisconnects: watcher.count("disconnect"),
    survivorMaxGapMs: round(watcher.maxReconnectGapMs()),
    extrapolated: {
      fromTenants: perTenantCap,
      wallMs: round((t1 - t0) * f + connectMs),
      trustMs: round(trust * f),
      reloads: Math.round(reloads * f),
      how: `linear ×${round(f, 2)} from ${perTenantCap} tenants (optimistic: render and reload grow with the tenant count, see reload-cost)`,
    },
    notes: [],
  };
}

async function peerFullResolver(syncAlways: boolean): Promise<Arm> {
  const { broker: peer, preloaded, push } = await startPeerBroker("peer-full", { syncAlways });
  const watcher = await SurvivorWatcher.start({ url: peer.url, creds: mintUserCreds(preloaded, { name: "survivor" }).creds });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const list = names("p", 0, N);
  const window = args.int("window", 64);
  const t0 = performance.now();
  // Trust phase: mint each account (as cotal's materialise does) and push its JWT; a reply with data.code 200 is the proof.
  const accounts = await push(list, window);
  const t1 = performance.now();
  // The same provisioning as cotal's spaceAdd: provisionSpace per account through mapPool, same width.
  await mapPool(accounts, PEER_PROVISION_CONCURRENCY, (rec) => provisionSpace(peer.url, rec));
  const t2 = performance.now();
  const connectMs = await sampleConnects(peer.url, (i) => mintUserCreds(accounts[i] as AccountRecord, { name: "sample" }).creds, accounts.length);
  const t3 = performance.now();
  await watcher.stop();
  const log = await peer.logs();
  return {
    arm: `peer: full resolver + $SYS.REQ.CLAIMS.UPDATE${syncAlways === COTAL_SYNC_ALWAYS ? "" : ` (${syncAlways ? "sync always" : "nats-server's default sync"}, not cotal's)`}`,
    tenants: N,
    wallMs: t3 - t0,
    trustMs: t1 - t0,
    provisionMs: t2 - t1,
    connectMs,
    reloads: log.split("\n").filter((l) => l.includes("Reloaded server configuration")).length,
    survivorDisconnects: watcher.count("disconnect"),
    survivorMaxGapMs: round(watcher.maxReconnectGapMs()),
    notes: [
      `${window} claim updates in flight; account JWTs with cotal's default quota; provisioning through mapPool(${PEER_PROVISION_CONCURRENCY}), cotal's pool bound`,
      `fsyncs: ${jetStreamSyncNote(syncAlways)}; the resolver's JWT files are written without fsync (nats-server has no setting for it)`,
    ],
  };
}

type Pair = { run: number; order: string; group: Arm; peer: Arm };

const pairRatios = (pairs: readonly Pair[]) =>
  pairs.map((p) => ({
    run: p.run,
    order: p.order,
    wall: round(p.group.wallMs / p.peer.wallMs, 3),
    trust: p.group.trustMs !== null && p.peer.trustMs !== null ? round(p.group.trustMs / p.peer.trustMs, 3) : null,
    provisioning: p.group.provisionMs !== null && p.peer.provisionMs !== null ? round(p.group.provisionMs / p.peer.provisionMs, 3) : null,
  }));

function printRatios(title: string, ratios: ReturnType<typeof pairRatios>): void {
  if (ratios.length === 0) return;
  console.log(`\n${title}`);
  console.log(table(["run", "order", "wall", "trust phase", "provisioning"], ratios.map((r) => [r.run, r.order, `${r.wall}×`, `${r.trust ?? "n/a"}×`, `${r.provisioning ?? "n/a"}×`])));
}

await runBench(async () => {
  const arms: Arm[] = [];
  const run = async (key: string, f: () => Promise<Arm>, label = ""): Promise<Arm | undefined> => {
    if (skip.has(key)) return undefined;
    console.log(`… ${key}${label}`);
    const arm = await f();
    await runCleanup(); // stop this arm's broker before the next arm starts: every arm has the machine to itself
    arms.push(arm);
    console.log(`  ${arm.arm}: wall ${s(arm.wallMs)}, trust ${s(arm.trustMs)}, provisioning ${s(arm.provisionMs)}, reloads ${arm.reloads}, survivor disconnects ${arm.survivorDisconnects}`);
    return arm;
  };
  // Group commit, peer and queue back to back in every run, the order rotated from run to run (a
  // disk that slows after a burst penalises whoever goes second): each ratio pairs arms of one run.
  const pairs: Pair[] = [];
  const defaultPairs: Pair[] = [];
  const queuePairs: { run: number; order: string; group: Arm; queue: Arm }[] = [];
  const byKey = {
    group: cotalGroupCommit,
    // the fair peer: cotal's JetStream sync; "peer-default": nats-server's default, when asked for
    peer: () => peerFullResolver(COTAL_SYNC_ALWAYS),
    "peer-default": () => peerFullResolver(false),
    queue: cotalQueue,
  } as const;
  const wanted = (k: keyof typeof byKey): boolean =>
    k === "peer" ? !skip.has("peer") && (peerSync.has("same") || !COTAL_SYNC_ALWAYS) : k === "peer-default" ? !skip.has("peer") && peerSync.has("default") && COTAL_SYNC_ALWAYS : !skip.has(k);
  const keys = (["group", "peer", "peer-default", "queue"] as const).filter(wanted);
  const peerNotes = keys.flatMap((k) => (k === "peer" ? [`peer: ${jetStreamSyncNote(COTAL_SYNC_ALWAYS)}`] : k === "peer-default" ? [`peer-default: ${jetStreamSyncNote(false)}`] : []));
  console.log(`durability: cotal's broker ${jetStreamSyncNote(COTAL_SYNC_ALWAYS)}${peerNotes.map((n) => `; ${n}`).join("")}`);
  for (let r = 0; r < runs; r++) {
    const order = keys.map((_, i) => keys[(i + r) % keys.length] as (typeof keys)[number]);
    const label = ` (run ${r + 1}/${runs})`;
    const got: Partial<Record<(typeof keys)[number], Arm>> = {};
    for (const k of order) got[k] = await run(k, byKey[k], label);
    const before = (a: string, b: string) => `${order.indexOf(a as never) < order.indexOf(b as never) ? a : b} first`;
    if (got.group && got.peer) pairs.push({ run: r + 1, order: before("group", "peer"), group: got.group, peer: got.peer });
    const unfair = got["peer-default"];
    if (got.group && unfair) defaultPairs.push({ run: r + 1, order: before("group", "peer-default"), group: got.group, peer: unfair });
    if (got.group && got.queue) queuePairs.push({ run: r + 1, order: before("group", "queue"), group: got.group, queue: got.queue });
  }
  await run("per-tenant", cotalPerTenant);

  console.log(`\nonboarding ${N} tenants end to end (trusted, provisioned, sample creds connect)`);
  console.log(
    table(
      ["arm", "tenants", "wall", "trust phase", "provisioning", "creds check", "reloads", "survivor disc.", "max gap"],
      arms.flatMap((a) => [
        [a.arm, a.tenants, s(a.wallMs), s(a.trustMs), s(a.provisionMs), `${round(a.connectMs)} ms`, a.reloads, a.survivorDisconnects, `${a.survivorMaxGapMs} ms`],
        ...(a.extrapolated ? [[`  ↳ extrapolated to ${N}`, N, s(a.extrapolated.wallMs), s(a.extrapolated.trustMs), "", "", a.extrapolated.reloads, "", ""]] : []),
      ]),
    ),
  );
  for (const a of arms) for (const n of [...a.notes, ...(a.extrapolated ? [a.extrapolated.how] : [])]) console.log(`  ${a.arm}: ${n}`);
  const ratios = pairRatios(pairs);
  printRatios("cotal group commit ÷ peer (same JetStream sync), each pair back to back", ratios);
  printRatios("cotal group commit ÷ peer with nats-server's default sync, each pair back to back", pairRatios(defaultPairs));

  const queueRatios = queuePairs.map((p) => ({ run: p.run, order: p.order, wall: round(p.queue.wallMs / p.group.wallMs, 3) }));
  if (queueRatios.length > 0) {
    console.log("\ncotal queue ÷ cotal group commit, each pair from one run");
    console.log(table(["run", "order", "wall"], queueRatios.map((r) => [r.run, r.order, `${r.wall}×`])));
  }

  const group = arms.filter((a) => a.arm.startsWith("cotal: group"));
  const best = group.length > 0 ? Math.min(...group.map((a) => a.wallMs)) : undefined;
  const wallRatio = ratios.length > 0 ? median(ratios.map((r) => r.wall)) : undefined;
  const trustRatio = ratios.length > 0 ? median(ratios.flatMap((r) => (r.trust === null ? [] : [r.trust]))) : undefined;
  const targets = {
    onboardingWall: best !== undefined ? { target: `≤ 10 s for ${N}`, value: round(best), met: best <= 10_000 } : "not measured",
    wallVsPeer: wallRatio !== undefined ? { target: "cotal end to end ≤ 1.0× the peer (issue 15; median of the pairs)", value: wallRatio, met: wallRatio <= 1 } : "not measured",
    wallVsFairPeer: wallRatio !== undefined ? { target: "cotal end to end ≤ 1.2× the peer with the same JetStream sync (issue 35; median of the pairs)", value: wallRatio, met: wallRatio <= 1.2 } : "not measured",
    trustVsPeer: trustRatio !== undefined ? { target: "cotal trust ≤ 2× peer (median of the pairs)", value: trustRatio, met: trustRatio <= 2 } : "not measured",
    reloads: group[0] ? { target: "≤ 10", value: group[0].reloads, met: group[0].reloads <= 10 } : "not measured",
    queueVsGroup: queueRatios.length > 0 ? { target: "queue ≤ 1.15× the direct batch (median of the pairs)", value: median(queueRatios.map((r) => r.wall)), met: median(queueRatios.map((r) => r.wall)) <= 1.15 } : "not measured",
  };
  console.log(`\ntargets: ${JSON.stringify(targets)}`);
  console.log(`wrote ${writeResult("onboarding", { n: N, perTenantCap, runs, cotalSyncAlways: COTAL_SYNC_ALWAYS, peerSync: [...peerSync], arms, ratios, defaultSyncRatios: pairRatios(defaultPairs), queueRatios, targets })}`);
});
