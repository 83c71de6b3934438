/**
 * Cold `up` of a large root: N tenants (3 streams each with the default template) are added in
 * batches, then the broker is stopped and started cold B times. Prints each boot's wall time and
 * whether it came up; a boot that fails is a finding, never retried (issue 12 item 11: the server
 * restores every stream before it answers, and readiness must follow that, not a fixed wait).
 * Each add batch is timed too (the `space add --from` scale curve: wall, ms per tenant, the broker's
 * open files after it; each phase's CPU, cotal's and the broker's, from /proc, so the growth table says
 * which part grows, issue 35); a batch the broker cannot take (`fd-budget` or any other refusal) ends the
 * adds there, is printed as the first limit, and the boots run at the count reached.
 *
 *   NATS_SERVER_BIN=… node packages/bench/dist/cold-boot.js [--tenants 2800] [--boots 3] [--batch 500]
 */
import { readdirSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { down, spaceAdd, up } from "@cotal/core";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { names, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { ms as fmt, round, table } from "./lib/stats.js";

const args = parseArgs();
const tenants = args.int("tenants", 2800);
const boots = args.int("boots", 3);
const batch = args.int("batch", 500);

interface Boot {
  ok: boolean;
  ms: number;
  fds?: number;
  /** Spaces the boot's template re-check found lacking and provisioned (normally 0). */
  provisioned?: number;
  error?: string;
}

function openFds(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/** The broker's user + system CPU so far, in ms (/proc/<pid>/stat utime + stime; clock ticks of 10 ms). */
function brokerCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** This process's user + system CPU so far, in ms. */
function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** One batch's figures, each phase's CPU split between cotal (this process: spaceAdd runs in it) and the broker. */
interface BatchRow {
  tenants: number;
  batch: number;
  ms: number;
  perTenantMs: number;
  sagaMs: number;
  provisionMs: number;
  cotalCpuMs: number;
  brokerCpuMs?: number;
  /** The saga (until its release) and the provisioning after it: cotal's and the broker's CPU in each. */
  phases: { saga: { cotalCpuMs: number; brokerCpuMs?: number }; provision: { cotalCpuMs: number; brokerCpuMs?: number } };
  fds?: number;
}

const orNa = (x?: number): string => (x === undefined ? "n/a" : fmt(x));
const cpuNow = (pid: number): { cotal: number; broker?: number } => ({ cotal: ownCpuMs(), broker: brokerCpuMs(pid) });
const brokerDelta = (a?: number, b?: number): number | undefined => (a !== undefined && b !== undefined ? b - a : undefined);

/** Adds `names` in one spaceAdd and reads both processes' CPU at its start, its saga's release and its end. */
async function timedBatch(root: string, pid: number, batchNames: string[], reachedAfter: number): Promise<BatchRow> {
  const t0 = performance.now();
  const c0 = cpuNow(pid);
  let releasedAt = t0;
  let cRelease = c0;
  const onTiming = (step: string): void => {
    if (step !== "release") return;
    releasedAt = performance.now();
    cRelease = cpuNow(pid);
  };
  await spaceAdd({ root, names: batchNames, lockWaitMs: 120_000, onTiming });
  const end = performance.now();
  const c1 = cpuNow(pid);
  const ms = end - t0;
  const brokerAll = brokerDelta(c0.broker, c1.broker);
  const brokerSaga = brokerDelta(c0.broker, cRelease.broker);
  const brokerProv = brokerDelta(cRelease.broker, c1.broker);
  return {
    tenants: reachedAfter,
    batch: batchNames.length,
    ms: round(ms),
    perTenantMs: round(ms / batchNames.length, 2),
    sagaMs: round(releasedAt - t0),
    provisionMs: round(end - releasedAt),
    cotalCpuMs: round(c1.cotal - c0.cotal),
    ...(brokerAll !== undefined ? { brokerCpuMs: brokerAll } : {}),
    phases: {
      saga: { cotalCpuMs: round(cRelease.cotal - c0.cotal), ...(brokerSaga !== undefined ? { brokerCpuMs: brokerSaga } : {}) },
      provision: { cotalCpuMs: round(c1.cotal - cRelease.cotal), ...(brokerProv !== undefined ? { brokerCpuMs: brokerProv } : {}) },
    },
    fds: openFds(pid),
  };
}

/**
 * Which part grows (issue 35): each figure of the last full batch ÷ the first's (same batch size), and
 * each figure's least-squares slope per 1,000 tenants already on the broker.
 */
function growth(curve: readonly BatchRow[]): { figure: string; first: number; last: number; ratio: number; slopePer1000: number }[] {
  const full = curve.filter((c) => c.batch === curve[0]?.batch);
  if (full.length < 2) return [];
  const before = full.map((c) => c.tenants - c.batch);
  const slope = (ys: number[]): number => {
    const mx = before.reduce((a, b) => a + b, 0) / before.length;
    const my = ys.reduce((a, b) => a + b, 0) / ys.length;
    const num = before.reduce((a, x, i) => a + (x - mx) * ((ys[i] as number) - my), 0);
    const den = before.reduce((a, x) => a + (x - mx) ** 2, 0);
    return den === 0 ? 0 : (num / den) * 1000;
  };
  const figures: [string, (c: BatchRow) => number | undefined][] = [
    ["wall", (c) => c.ms],
    ["cotal CPU, saga", (c) => c.phases.saga.cotalCpuMs],
    ["cotal CPU, provisioning", (c) => c.phases.provision.cotalCpuMs],
    ["broker CPU, saga", (c) => c.phases.saga.brokerCpuMs],
    ["broker CPU, provisioning", (c) => c.phases.provision.brokerCpuMs],
  ];
  return figures.flatMap(([figure, f]) => {
    const ys = full.map(f);
    if (ys.some((y) => y === undefined)) return [];
    const v = ys as number[];
    const first = v[0] as number;
    const last = v[v.length - 1] as number;
    return [{ figure, first, last, ratio: first > 0 ? round(last / first, 2) : Number.NaN, slopePer1000: round(slope(v)) }];
  });
}

await runBench(async () => {
  const r = await startCotalRoot("cold-boot");
  const addStarted = performance.now();
  const curve: BatchRow[] = [];
  let limit: { at: number; code?: string; message: string } | undefined;
  let reached = 1;
  // The root starts with one space ("default"), so N-1 more make N tenants.
  for (let done = 1; done < tenants && !limit; done += batch) {
    const count = Math.min(batch, tenants - done);
    let row: BatchRow;
    try {
      row = await timedBatch(r.root, r.started.pid, names("t", done, count), done + count);
    } catch (err) {
      const e = err as { code?: string; details?: { room?: number } };
      limit = { at: done, code: e.code, message: err instanceof Error ? err.message.slice(0, 400) : String(err) };
      console.log(`\nbatch ${done}-${done + count - 1} refused: ${limit.code ?? "error"}: ${limit.message}`);
      // The fd budget names the room left: fill it, so the curve ends at the largest count that fits.
      const room = e.code === "fd-budget" ? (e.details?.room ?? 0) : 0;
      if (room <= 0 || room >= count) break;
      row = await timedBatch(r.root, r.started.pid, names("t", done, room), done + room);
    }
    reached = row.tenants;
    curve.push(row);
    const c = row;
    console.log(`added ${reached}/${tenants}: ${fmt(c.ms)} (saga ${fmt(c.sagaMs)}: cotal CPU ${fmt(c.phases.saga.cotalCpuMs)}, broker CPU ${orNa(c.phases.saga.brokerCpuMs)}; provisioning ${fmt(c.provisionMs)}: cotal CPU ${fmt(c.phases.provision.cotalCpuMs)}, broker CPU ${orNa(c.phases.provision.brokerCpuMs)}; ${c.fds ?? "?"} fds)`);
  }
  const addMs = performance.now() - addStarted;
  console.log(`\n${reached} tenants added in ${fmt(addMs)}${limit ? ` (asked for ${tenants}; stopped by ${limit.code ?? "an error"})` : ""}`);
  console.log(
    table(
      ["tenants after", "batch", "wall", "per tenant", "saga (trust)", "cotal CPU", "broker CPU", "provisioning", "cotal CPU", "broker CPU", "broker fds"],
      curve.map((c) => [c.tenants, c.batch, fmt(c.ms), `${c.perTenantMs} ms`, fmt(c.sagaMs), fmt(c.phases.saga.cotalCpuMs), orNa(c.phases.saga.brokerCpuMs), fmt(c.provisionMs), fmt(c.phases.provision.cotalCpuMs), orNa(c.phases.provision.brokerCpuMs), c.fds ?? "n/a"]),
    ),
  );
  const grew = growth(curve);
  if (grew.length > 0) {
    console.log("\nwhich part grows: the last full batch ÷ the first, and the least-squares slope per 1,000 tenants already there (cotal's CPU is this process's, where spaceAdd runs)");
    console.log(table(["figure", "first batch", "last batch", "last ÷ first", "slope per 1,000"], grew.map((g) => [g.figure, fmt(g.first), fmt(g.last), `${g.ratio}×`, fmt(g.slopePer1000)])));
  }

  const results: Boot[] = [];
  for (let i = 0; i < boots; i++) {
    await down({ root: r.root, graceMs: 60_000 });
    const t0 = performance.now();
    try {
      const started = await up({ root: r.root, detach: true });
      results.push({ ok: true, ms: performance.now() - t0, fds: openFds(started.pid), provisioned: started.provisioned.length });
    } catch (err) {
      results.push({ ok: false, ms: performance.now() - t0, error: err instanceof Error ? err.message.slice(0, 200) : String(err) });
    }
    const b = results[i]!;
    console.log(`boot ${i + 1}/${boots}: ${b.ok ? "up" : "FAILED"} in ${fmt(b.ms)}${b.fds === undefined ? "" : `, broker holds ${b.fds} fds`}${b.provisioned === undefined ? "" : `, ${b.provisioned} space(s) provisioned`}${b.error ? ` (${b.error})` : ""}`);
  }
  const ok = results.filter((b) => b.ok).length;
  console.log(`\ncold up at ${reached} tenants: ${ok}/${boots} booted; wall ${results.map((b) => fmt(b.ms)).join(", ")}`);
  writeResult("cold-boot", { tenants, reached, batch, addMs: round(addMs), curve, growth: grew, limit, boots: results.map((b) => ({ ...b, ms: round(b.ms) })) });
  if (ok < boots) process.exitCode = 1;
});
