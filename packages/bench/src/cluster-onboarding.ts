/**
 * Onboarding N tenants on a three-node cluster root vs a single broker, back to back in one run
 * (docs/cluster.md, issue 19): the same `spaceAdd` group commits (batches of --batch names) on each,
 * wall time from the first add to a sample cred connecting (every node on the cluster), the trust
 * phase (to the last saga's release), and the "Reloaded server configuration" lines per node's log.
 *
 *   node packages/bench/dist/cluster-onboarding.js [--n 1000] [--batch 100] [--replicas 1] [--skip single,cluster]
 */
import { performance } from "node:perf_hooks";
import { join } from "node:path";
import { freePort, tempRoot } from "@cotal/harness";
import { RootLayout, down, spaceAdd, up, type UpResult } from "@cotal/core";
import { connectWithCreds } from "@cotal/core/broker";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench } from "./lib/cleanup.js";
import { names, reloadLines, spaceCreds } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { round, table } from "./lib/stats.js";

const args = parseArgs();
const N = args.int("n", 1000);
const BATCH = Math.min(N, args.int("batch", 100));
const REPLICAS = args.int("replicas", 1);
const skip = new Set(args.str("skip", "").split(",").filter(Boolean));

interface Arm {
  arm: string;
  tenants: number;
  sagas: number;
  wallMs: number;
  trustMs: number;
  provisionMs: number;
  /** Reload lines per node during the adds (the single broker is one node). */
  reloadsPerNode: Record<string, number>;
  connectMs: number;
}


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

async function freshRoot(prefix: string, cluster: boolean): Promise<{ root: string; layout: RootLayout; started: UpResult }> {
  const tmp = await tempRoot(`cotal-bench-${prefix}-`);
  onCleanup(`remove ${tmp.path}`, () => tmp.cleanup());
  const root = join(tmp.path, ".cotal");
  const port = await freePort();
  onCleanup(`stop the broker of ${root}`, () => down({ root, graceMs: 10_000 }));
  const started = await up({ root, detach: true, port, host: "127.0.0.1", space: "default", ...(cluster ? { cluster: 3, ...(REPLICAS !== 1 ? { tenantReplicas: REPLICAS } : {}) } : {}) });
  return { root, layout: new RootLayout(root), started };
}

async function onboard(label: string, cluster: boolean): Promise<Arm> {
  const { root, layout, started } = await freshRoot(cluster ? "cluster" : "single", cluster);
  const logs: Record<string, string> = cluster ? Object.fromEntries((started.nodes ?? []).map((n) => [n.name, layout.nodeLogFile(n.name)])) : { broker: layout.logFile };
  const before = Object.fromEntries(Object.entries(logs).map(([n, f]) => [n, reloadLines(f)]));
  const list = names("t", 0, N);
  let provisionMs = 0;
  let trustMs = 0;
  let sagas = 0;
  const t0 = performance.now();
  for (let i = 0; i < list.length; i += BATCH) {
    const chunk = list.slice(i, i + BATCH);
    let releaseAt = 0;
    const ts = performance.now();
    const res = await spaceAdd({ root, names: chunk, onTiming: (step) => { if (step === "release") releaseAt = performance.now(); } });
    const te = performance.now();
    if (res.added.length !== chunk.length) throw new Error(`${label}: added ${res.added.length} of ${chunk.length}`);
    trustMs += releaseAt - ts;
    provisionMs += te - releaseAt;
    sagas++;
  }
  const last = spaceCreds(layout, list[list.length - 1] as string);
  let connectMs = 0;
  for (const url of cluster ? (started.nodes ?? []).map((n) => n.url) : [started.url]) connectMs += await sampleConnects(url, last);
  const wallMs = performance.now() - t0;
  const reloadsPerNode = Object.fromEntries(Object.entries(logs).map(([n, f]) => [n, reloadLines(f) - (before[n] ?? 0)]));
  await down({ root, graceMs: 10_000 });
  return { arm: label, tenants: N, sagas, wallMs, trustMs, provisionMs, reloadsPerNode, connectMs };
}

const s = (x: number): string => `${(x / 1000).toFixed(2)} s`;

await runBench(async () => {
  const arms: Arm[] = [];
  if (!skip.has("single")) arms.push(await onboard("single broker", false));
  if (!skip.has("cluster")) arms.push(await onboard(`3-node cluster (tenant streams R${REPLICAS})`, true));
  console.log(`onboarding ${N} tenants in group commits of ${BATCH} (one spaceAdd each), back to back on this machine`);
  console.log(table(["arm", "tenants", "sagas", "wall", "trust phase", "provisioning", "reloads per node", "sample connect"], arms.map((a) => [a.arm, a.tenants, a.sagas, s(a.wallMs), s(a.trustMs), s(a.provisionMs), Object.entries(a.reloadsPerNode).map(([n, c]) => `${n.replace(/^cotal-[0-9a-f]+-/, "")} ${c}`).join(", "), `${round(a.connectMs)} ms`])));
  const path = writeResult("cluster-onboarding", { n: N, batch: BATCH, replicas: REPLICAS, arms });
  console.log(`result: ${path}`);
});
