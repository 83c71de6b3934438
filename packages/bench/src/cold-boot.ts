/**
 * Cold `up` of a large root: N tenants (3 streams each with the default template) are added in
 * batches, then the broker is stopped and started cold B times. Prints each boot's wall time and
 * whether it came up; a boot that fails is a finding, never retried (issue 12 item 11: the server
 * restores every stream before it answers, and readiness must follow that, not a fixed wait).
 * Each add batch is timed too (the `space add --from` scale curve: wall, ms per tenant, the broker's
 * open files after it); a batch the broker cannot take (`fd-budget` or any other refusal) ends the
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

await runBench(async () => {
  const r = await startCotalRoot("cold-boot");
  const addStarted = performance.now();
  const curve: { tenants: number; batch: number; ms: number; perTenantMs: number; sagaMs: number; provisionMs: number; cotalCpuMs: number; brokerCpuMs?: number; fds?: number }[] = [];
  let limit: { at: number; code?: string; message: string } | undefined;
  let reached = 1;
  // The root starts with one space ("default"), so N-1 more make N tenants.
  for (let done = 1; done < tenants && !limit; done += batch) {
    let count = Math.min(batch, tenants - done);
    const t0 = performance.now();
    const cpu0 = ownCpuMs();
    const broker0 = brokerCpuMs(r.started.pid);
    // The saga (trust) ends at its release; what follows is the batch's provisioning.
    let releasedAt = t0;
    const onTiming = (step: string): void => {
      if (step === "release") releasedAt = performance.now();
    };
    try {
      await spaceAdd({ root: r.root, names: names("t", done, count), lockWaitMs: 120_000, onTiming });
    } catch (err) {
      const e = err as { code?: string; details?: { room?: number } };
      limit = { at: done, code: e.code, message: err instanceof Error ? err.message.slice(0, 400) : String(err) };
      console.log(`\nbatch ${done}-${done + count - 1} refused: ${limit.code ?? "error"}: ${limit.message}`);
      // The fd budget names the room left: fill it, so the curve ends at the largest count that fits.
      const room = e.code === "fd-budget" ? (e.details?.room ?? 0) : 0;
      if (room <= 0 || room >= count) break;
      count = room;
      await spaceAdd({ root: r.root, names: names("t", done, count), lockWaitMs: 120_000, onTiming });
    }
    const end = performance.now();
    const ms = end - t0;
    const broker1 = brokerCpuMs(r.started.pid);
    reached = done + count;
    curve.push({
      tenants: reached,
      batch: count,
      ms: round(ms),
      perTenantMs: round(ms / count, 2),
      sagaMs: round(releasedAt - t0),
      provisionMs: round(end - releasedAt),
      cotalCpuMs: round(ownCpuMs() - cpu0),
      ...(broker0 !== undefined && broker1 !== undefined ? { brokerCpuMs: broker1 - broker0 } : {}),
      fds: openFds(r.started.pid),
    });
    const c = curve[curve.length - 1]!;
    console.log(`added ${reached}/${tenants}: ${fmt(c.ms)} (saga ${fmt(c.sagaMs)}, provisioning ${fmt(c.provisionMs)}; cotal CPU ${fmt(c.cotalCpuMs)}, broker CPU ${c.brokerCpuMs === undefined ? "n/a" : fmt(c.brokerCpuMs)}; ${c.fds ?? "?"} fds)`);
  }
  const addMs = performance.now() - addStarted;
  console.log(`\n${reached} tenants added in ${fmt(addMs)}${limit ? ` (asked for ${tenants}; stopped by ${limit.code ?? "an error"})` : ""}`);
  console.log(
    table(
      ["tenants after", "batch", "wall", "per tenant", "saga (trust)", "provisioning", "cotal CPU", "broker CPU", "broker fds"],
      curve.map((c) => [c.tenants, c.batch, fmt(c.ms), `${c.perTenantMs} ms`, fmt(c.sagaMs), fmt(c.provisionMs), fmt(c.cotalCpuMs), c.brokerCpuMs === undefined ? "n/a" : fmt(c.brokerCpuMs), c.fds ?? "n/a"]),
    ),
  );

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
  writeResult("cold-boot", { tenants, reached, batch, addMs: round(addMs), curve, limit, boots: results.map((b) => ({ ...b, ms: round(b.ms) })) });
  if (ok < boots) process.exitCode = 1;
});
