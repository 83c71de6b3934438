/**
 * Where provisioning's time goes, and the change of issue 15 measured back to back in one run:
 *   (p) the template's creates for N trusted spaces of one cotal root (added by spaceAdd, then their
 *       streams deleted, unmeasured, so each arm creates from scratch): "sequential" is the pre-issue-15 sequence
 *       (API probe, stream info → add, each KV bucket probe → info → add, every request awaited in
 *       turn), kept here only as the comparison arm; "pipelined" is provisionSpace today. Both
 *       through a pool of PROVISION_CONCURRENCY, each arm on its own N accounts, alternating order.
 *   (o) $SYS observer creds for N spaces of a cotal root: "per file, sync" (writeFileAtomic each:
 *       temp, fsync, rename, directory fsync, on the event loop) against writeObserverCredsBatch.
 * Wall time, the broker's CPU (/proc/<pid>/stat) and this process's CPU for each arm.
 *
 *   node packages/bench/dist/provision.js [--n 1000] [--runs 2]
 */
import { GUARDS_ON } from "@cotal/core/light";
import { readFileSync, rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { mapPool, spaceAdd } from "@cotal/core";
import { connectAsAccount } from "@cotal/core/broker";
import { deleteSpaceStreams, PROVISION_CONCURRENCY, provisionSpace, writeObserverCredsBatch } from "@cotal/core/provision";
import { loadBrokerTrust, loadSpaceAccount, writeFileAtomic, type AccountRecord } from "@cotal/core/root";
import { mintObserverCreds } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { names, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const N = args.int("n", 1000);
const runs = args.int("runs", 2);

/** The pre-issue-15 provisionSpace sequence (ten requests awaited in turn for a fresh space). */
async function sequentialProvision(url: string, account: AccountRecord): Promise<void> {
  const t = account.name.replace(/[^A-Za-z0-9_-]/g, "_");
  const nc = await connectAsAccount(url, account, { name: `bench-seq-${t}`, ttlSeconds: 300 });
  try {
    const jsm = await jetstreamManager(nc);
    const cfg = { name: `cotal_events_${t}`, subjects: [`cotal.${t}.events.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, description: `events of space ${account.name}` };
    try {
      await jsm.streams.info(cfg.name);
      await jsm.streams.update(cfg.name, cfg);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
      await jsm.streams.add(cfg);
    }
    const kvm = new Kvm(nc);
    await kvm.create(`cotal_state_${t}`, { history: 5, ttl: 0, storage: StorageType.File });
    await kvm.create(`cotal_presence_${t}`, { history: 1, ttl: 30_000, storage: StorageType.File });
  } finally {
    await nc.close();
  }
}

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime in clock ticks (100 Hz)
}

interface Measure {
  arm: string;
  run: number;
  wallMs: number;
  brokerCpuMs: number | null;
  nodeCpuMs: number;
}

async function measure(arm: string, run: number, pid: number | null, f: () => Promise<unknown>): Promise<Measure> {
  const c0 = pid === null ? 0 : cpuMs(pid);
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await f();
  const wallMs = performance.now() - t0;
  const u = process.cpuUsage(u0);
  return { arm, run, wallMs: round(wallMs), brokerCpuMs: pid === null ? null : cpuMs(pid) - c0, nodeCpuMs: round((u.user + u.system) / 1000) };
}

await runBench(async () => {
  const results: Measure[] = [];
  const show = (m: Measure): void => console.log(`  ${m.arm} (run ${m.run}): ${round(m.wallMs)} ms wall, broker CPU ${m.brokerCpuMs ?? "n/a"} ms, node CPU ${m.nodeCpuMs} ms`);

  const root = await startCotalRoot("provision");
  const pid = root.started.pid;
  const url = root.started.url;
  const broker = loadBrokerTrust(root.layout);
  let batch = 0;
  /** N trusted spaces whose streams and observer creds are gone again: what a fresh batch owes after its commit. */
  const freshSpaces = async (): Promise<AccountRecord[]> => {
    const list = names(`b${batch++}x`, 0, N);
    await spaceAdd({ root: root.root, names: list });
    const recs = list.map((n) => loadSpaceAccount(root.layout, n) as AccountRecord);
    await mapPool(recs, PROVISION_CONCURRENCY, (a) => deleteSpaceStreams(url, a));
    for (const rec of recs) rmSync(root.layout.sysCredsFile(rec.name, "observer"), { force: true });
    return recs;
  };

  console.log(`… provisioning ${N} trusted spaces per arm on one cotal root`);
  for (let r = 1; r <= runs; r++) {
    const order = r % 2 === 1 ? ["sequential", "pipelined"] : ["pipelined", "sequential"];
    for (const arm of order) {
      const recs = await freshSpaces();
      const m = await measure(`provisioning, ${arm}`, r, pid, () =>
        mapPool(recs, PROVISION_CONCURRENCY, async (a) => {
          if (arm === "sequential") await sequentialProvision(url, a);
          else await provisionSpace(url, a);
        }),
      );
      results.push(m);
      show(m);
      // Free the broker's files again (about 6 per tenant on 2.9.10), or a few batches fill its budget.
      await mapPool(recs, PROVISION_CONCURRENCY, (a) => deleteSpaceStreams(url, a));
    }
  }

  console.log(`… $SYS observer creds for ${N} spaces per arm`);
  for (let r = 1; r <= runs; r++) {
    const order = r % 2 === 1 ? ["per file, sync", "batch, async"] : ["batch, async", "per file, sync"];
    for (const arm of order) {
      const recs = await freshSpaces();
      const m = await measure(`observer creds, ${arm}`, r, null, async () => {
        if (arm === "batch, async") await writeObserverCredsBatch(root.layout, broker, recs, GUARDS_ON);
        else for (const rec of recs) writeFileAtomic(root.layout.sysCredsFile(rec.name, "observer"), mintObserverCreds(broker.system, rec, GUARDS_ON).creds);
      });
      results.push(m);
      show(m);
    }
  }

  const arms = [...new Set(results.map((m) => m.arm))];
  const summary = arms.map((arm) => {
    const ms = results.filter((m) => m.arm === arm);
    return { arm, runs: ms.length, wallMs: median(ms.map((m) => m.wallMs)), perTenantMs: round(median(ms.map((m) => m.wallMs)) / N, 3), brokerCpuMs: ms[0]?.brokerCpuMs === null ? null : median(ms.map((m) => m.brokerCpuMs ?? 0)), nodeCpuMs: median(ms.map((m) => m.nodeCpuMs)) };
  });
  console.log(`\nprovisioning ${N} tenants, medians of ${runs} (arms alternating in one run)`);
  console.log(table(["arm", "wall", "per tenant", "broker CPU", "node CPU"], summary.map((s) => [s.arm, `${round(s.wallMs)} ms`, `${s.perTenantMs} ms`, s.brokerCpuMs === null ? "n/a" : `${s.brokerCpuMs} ms`, `${round(s.nodeCpuMs)} ms`])));
  console.log(`wrote ${writeResult("provision", { n: N, runs, results, summary })}`);
});
