/**
 * File descriptors a real nats-server holds per tenant: one root per binary, grown by group-commit
 * `spaceAdd` batches (default template, provisioned), /proc/<pid>/fd counted after each level and
 * sampled every 5 ms during the add (the provisioning peak). Figures feed FD_PER_TENANT in
 * packages/core/src/broker/fd-budget.ts.
 *
 *   node packages/bench/dist/fd-budget.js [--tenants 250,500,1000] [--bins /usr/sbin/nats-server,...]
 */
import { readFileSync, readdirSync } from "node:fs";
import { brokerState, spaceAdd } from "@cotal/core";
import { parseArgs } from "./lib/args.js";
import { runBench, runCleanup } from "./lib/cleanup.js";
import { names, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { table } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [250, 500, 1000]);
const bins = args.str("bins", "/usr/sbin/nats-server,/work/main/.tools/nats-server/2.14.10/nats-server").split(",");

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function softLimit(pid: number): string {
  const line = readFileSync(`/proc/${pid}/limits`, "utf8").split("\n").find((l) => l.startsWith("Max open files"));
  return line?.replace(/\s+/g, " ").replace("Max open files ", "") ?? "?";
}

interface Level {
  tenants: number;
  fds: number;
  peak: number;
  perTenant: number;
  peakPerTenant: number;
}

await runBench(async () => {
  const results: { bin: string; base: number; limits: string; levels: Level[] }[] = [];
  for (const bin of bins) {
    process.env.NATS_SERVER_BIN = bin;
    const { root, layout } = await startCotalRoot("fd");
    const st = brokerState(layout);
    if (!st.running) throw new Error("the bench broker is not running");
    const pid = st.runtime.owner.pid;
    const base = fdCount(pid); // one tenant ("default") already provisioned
    const rows: Level[] = [];
    let have = 1;
    for (const level of levels) {
      const batch = names("fd", have, level - have);
      let peak = 0;
      const timer = setInterval(() => {
        peak = Math.max(peak, fdCount(pid));
      }, 5);
      await spaceAdd({ root, names: batch });
      clearInterval(timer);
      have = level;
      await new Promise((r) => setTimeout(r, 500));
      const fds = fdCount(pid);
      rows.push({ tenants: level, fds, peak: Math.max(peak, fds), perTenant: (fds - base) / (level - 1), peakPerTenant: (Math.max(peak, fds) - base) / (level - 1) });
      console.log(`${bin}: ${level} tenants, ${fds} fds (peak ${peak})`);
    }
    results.push({ bin, base, limits: softLimit(pid), levels: rows });
    await runCleanup();
  }
  for (const r of results) {
    console.log(`\n${r.bin}  (fds with 1 tenant: ${r.base}; Max open files soft/hard: ${r.limits})`);
    console.log(
      table(
        ["tenants", "fds after", "peak during add", "fds/tenant", "peak/tenant"],
        r.levels.map((l) => [String(l.tenants), String(l.fds), String(l.peak), l.perTenant.toFixed(2), l.peakPerTenant.toFixed(2)]),
      ),
    );
  }
  console.log(`wrote ${writeResult("fd-budget", { levels, results })}`);
});
