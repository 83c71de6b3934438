/**
 * Bulk onboarding of N tenants end to end (trusted, provisioned, a cred of a sample connects), in one run:
 *   (a) cotal, group commit: one spaceAdd with every name
 *   (q) cotal through the BullMQ queue (@cotal/jobs: enqueue + an in-process CotalWorker, throwaway redis-server)
 *   (b) cotal, one saga per tenant, capped at --per-tenant and extrapolated linearly to N
 *   (c) the peer: nats-server with the `full` resolver receiving the same number of account JWTs over
 *       $SYS.REQ.CLAIMS.UPDATE, then the same provisioning
 *
 *   node packages/bench/dist/onboarding.js [--n 1000] [--per-tenant 100] [--skip queue,per-tenant,peer]
 */
import { performance } from "node:perf_hooks";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { ProcessBackend, SurvivorWatcher, tempRoot, type ProcessBroker } from "@cotal/harness";
import { createLogger, enqueueJobs, trackJobs, CotalWorker, workerConfig } from "@cotal/jobs";
import { mapPool, spaceAdd, type SagaTiming } from "@cotal/saga";
import { connectWithCreds } from "@cotal/saga/broker";
import { provisionSpace } from "@cotal/saga/provision";
import { toAccountRecord, type AccountRecord } from "@cotal/saga/root";
import { createAccountTrust, createBrokerTrust, mintSystemUserCreds, mintUserCreds } from "@cotal/saga/trust";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench } from "./lib/cleanup.js";
import { names, reloadCount, spaceCreds, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { startRedis } from "./lib/redis.js";
import { round, table } from "./lib/stats.js";

const args = parseArgs();
const N = args.int("n", 1000);
const perTenantCap = Math.min(N, args.int("per-tenant", 100));
/** packages/saga/src/ops/space-add.ts provisions a batch with PROVISION_CONCURRENCY = 16 (not exported); the peer gets the same width. */
const PEER_PROVISION_CONCURRENCY = 16;
const skip = new Set(args.str("skip", "").split(",").filter(Boolean));

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

/** Proves a sample tenant's user creds connect and answer a round trip. */
async function sampleConnects(url: string, creds: string): Promise<number> {
  const t0 = performance.now();
  const nc = await connectWithCreds(url, creds, { name: "bench-sample", reconnect: false });
  try {
    await nc.flush();
  } finally {
    await nc.close();
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
  const connectMs = await sampleConnects(br.started.url, spaceCreds(br.layout, list[list.length - 1] as string));
  const t2 = performance.now();
  await watcher.stop();
  if (res.added.length !== N || res.provisioned.length !== N) throw new Error(`group commit added ${res.added.length}, provisioned ${res.provisioned.length}`);
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
    notes: [`saga steps (ms): ${Object.entries(steps).map(([k, v]) => `${k} ${round(v ?? 0)}`).join(", ")}`],
  };
}

async function cotalQueue(): Promise<Arm> {
  const redisUrl = await startRedis();
  const br = await startCotalRoot("onboard-queue");
  const watcher = await SurvivorWatcher.start({ url: br.started.url, creds: spaceCreds(br.layout, "default") });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const reloads0 = reloadCount(br.layout);
  const cfg = workerConfig(br.root, { redisUrl, http: undefined }, {});
  const batches: string[] = [];
  // The worker's JSON log lines, read back: each group commit is one `event: "batch"` line.
  let conflicts = 0;
  let reprovisioned = 0;
  const logger = createLogger({ format: "json", name: "bench", destination: { write: (line: string) => {
    const e = JSON.parse(line) as { event?: string; msg?: string };
    if (e.event === "batch" && e.msg) batches.push(e.msg);
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
  const connectMs = await sampleConnects(br.started.url, spaceCreds(br.layout, list[list.length - 1] as string));
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
  const connectMs = await sampleConnects(br.started.url, spaceCreds(br.layout, list[list.length - 1] as string));
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

async function peerFullResolver(): Promise<Arm> {
  const broker = createBrokerTrust({ name: "peer", retainSystemSigningSeed: true });
  const jwtDir = await tempRoot("cotal-bench-peer-jwt-");
  onCleanup(`remove ${jwtDir.path}`, () => jwtDir.cleanup());
  await mkdir(join(jwtDir.path, "jwt"), { recursive: true, mode: 0o700 });
  const survivorAcct = toAccountRecord(createAccountTrust(broker.operator, "survivor", { kind: "space" }));
  const config = [
    "server_name: peer-full",
    "listen: {{HOST}}:{{PORT}}",
    'jetstream { store_dir: "{{STORE_DIR}}" }',
    `operator: "${broker.operator.jwt}"`,
    `system_account: ${broker.system.publicKey}`,
    `resolver: { type: full, dir: "${join(jwtDir.path, "jwt")}", allow_delete: false }`,
    "resolver_preload: {",
    `  ${broker.system.publicKey}: "${broker.system.jwt}"`,
    `  ${survivorAcct.publicKey}: "${survivorAcct.jwt}"`,
    "}",
    "",
  ].join("\n");
  const peer: ProcessBroker = await new ProcessBackend().start({ config, name: "peer-full" });
  onCleanup("dispose the peer broker", () => peer.dispose());
  const watcher = await SurvivorWatcher.start({ url: peer.url, creds: mintUserCreds(survivorAcct, { name: "survivor" }).creds });
  onCleanup("stop the survivor watcher", () => watcher.stop());
  const sys = await connectWithCreds(peer.url, mintSystemUserCreds(broker.system, { name: "claims-pusher" }).creds, { name: "bench-claims" });
  onCleanup("close the $SYS connection", () => sys.close());

  const list = names("p", 0, N);
  const window = args.int("window", 64);
  const t0 = performance.now();
  // Trust phase: mint each account (as cotal's materialise does) and push its JWT; a reply with data.code 200 is the proof.
  const accounts: AccountRecord[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= list.length) return;
      const rec = toAccountRecord(createAccountTrust(broker.operator, list[i] as string, { kind: "space" }));
      accounts[i] = rec;
      const reply = await sys.request("$SYS.REQ.CLAIMS.UPDATE", rec.jwt, { timeout: 10_000 });
      const body = reply.json<{ data?: { code?: number }; error?: { code?: number; description?: string } }>();
      if (body.data?.code !== 200) throw new Error(`claim update of ${rec.name}: ${JSON.stringify(body.error ?? body)}`);
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  const t1 = performance.now();
  // The same provisioning as cotal's spaceAdd: provisionSpace per account through mapPool, same width.
  await mapPool(accounts, PEER_PROVISION_CONCURRENCY, (rec) => provisionSpace(peer.url, rec));
  const t2 = performance.now();
  const connectMs = await sampleConnects(peer.url, mintUserCreds(accounts[accounts.length - 1] as AccountRecord, { name: "sample" }).creds);
  const t3 = performance.now();
  await watcher.stop();
  await sys.close();
  const log = await peer.logs();
  return {
    arm: "peer: full resolver + $SYS.REQ.CLAIMS.UPDATE",
    tenants: N,
    wallMs: t3 - t0,
    trustMs: t1 - t0,
    provisionMs: t2 - t1,
    connectMs,
    reloads: log.split("\n").filter((l) => l.includes("Reloaded server configuration")).length,
    survivorDisconnects: watcher.count("disconnect"),
    survivorMaxGapMs: round(watcher.maxReconnectGapMs()),
    notes: [`${window} claim updates in flight; provisioning through mapPool(${PEER_PROVISION_CONCURRENCY}), as cotal's spaceAdd does it`],
  };
}

await runBench(async () => {
  const arms: Arm[] = [];
  const run = async (key: string, f: () => Promise<Arm>): Promise<void> => {
    if (skip.has(key)) return;
    console.log(`… ${key}`);
    const arm = await f();
    arms.push(arm);
    console.log(`  ${arm.arm}: wall ${s(arm.wallMs)}, trust ${s(arm.trustMs)}, provisioning ${s(arm.provisionMs)}, reloads ${arm.reloads}, survivor disconnects ${arm.survivorDisconnects}`);
  };
  await run("group", cotalGroupCommit);
  await run("queue", cotalQueue);
  await run("per-tenant", cotalPerTenant);
  await run("peer", peerFullResolver);

  console.log(`\nonboarding ${N} tenants end to end (trusted, provisioned, a sample cred connects)`);
  console.log(
    table(
      ["arm", "tenants", "wall", "trust phase", "provisioning", "reloads", "survivor disc.", "max gap"],
      arms.flatMap((a) => [
        [a.arm, a.tenants, s(a.wallMs), s(a.trustMs), s(a.provisionMs), a.reloads, a.survivorDisconnects, `${a.survivorMaxGapMs} ms`],
        ...(a.extrapolated ? [[`  ↳ extrapolated to ${N}`, N, s(a.extrapolated.wallMs), s(a.extrapolated.trustMs), "", a.extrapolated.reloads, "", ""]] : []),
      ]),
    ),
  );
  for (const a of arms) for (const n of [...a.notes, ...(a.extrapolated ? [a.extrapolated.how] : [])]) console.log(`  ${a.arm}: ${n}`);

  const group = arms.find((a) => a.arm.startsWith("cotal: group"));
  const peer = arms.find((a) => a.arm.startsWith("peer"));
  const targets = {
    onboardingWall: group ? { target: `≤ 10 s for ${N}`, value: round(group.wallMs), met: group.wallMs <= 10_000 } : "not measured",
    trustVsPeer: group && peer && group.trustMs !== null && peer.trustMs !== null ? { target: "cotal trust ≤ 2× peer", value: round(group.trustMs / peer.trustMs, 3), met: group.trustMs <= 2 * peer.trustMs } : "not measured",
    reloads: group ? { target: "≤ 10", value: group.reloads, met: group.reloads <= 10 } : "not measured",
  };
  console.log(`\ntargets: ${JSON.stringify(targets)}`);
  console.log(`wrote ${writeResult("onboarding", { n: N, perTenantCap, arms, targets })}`);
});
