/**
 * Cold `up` of a large root: N tenants (3 streams each with the default template) are added in
 * batches, then the broker is stopped and started cold B times. Prints each boot's wall time and
 * whether it came up; a boot that fails is a finding, never retried (issue 12 item 11: the server
 * restores every stream before it answers, and readiness must follow that, not a fixed wait).
 *
 *   node packages/bench/dist/cold-boot.js [--tenants 2800] [--boots 3] [--batch 500]
 */
import { readdirSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { down, spaceAdd, up } from "@cotal/saga";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { names, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { ms, round } from "./lib/stats.js";

const args = parseArgs();
const tenants = args.int("tenants", 2800);
const boots = args.int("boots", 3);
const batch = args.int("batch", 500);

interface Boot {
  ok: boolean;
  ms: number;
  fds?: number;
  error?: string;
}

function openFds(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

await runBench(async () => {
  const r = await startCotalRoot("cold-boot");
  const addStarted = performance.now();
  // The root starts with one space ("default"), so N-1 more make N tenants.
  for (let done = 1; done < tenants; done += batch) {
    const count = Math.min(batch, tenants - done);
    await spaceAdd({ root: r.root, names: names("t", done, count), lockWaitMs: 120_000 });
    process.stderr.write(`added ${done + count}/${tenants}\r`);
  }
  const addMs = performance.now() - addStarted;
  console.log(`\n${tenants} tenants added in ${ms(addMs)}`);

  const results: Boot[] = [];
  for (let i = 0; i < boots; i++) {
    await down({ root: r.root, graceMs: 60_000 });
    const t0 = performance.now();
    try {
      const started = await up({ root: r.root, detach: true });
      results.push({ ok: true, ms: performance.now() - t0, fds: openFds(started.pid) });
    } catch (err) {
      results.push({ ok: false, ms: performance.now() - t0, error: err instanceof Error ? err.message.slice(0, 200) : String(err) });
    }
    const b = results[i]!;
    console.log(`boot ${i + 1}/${boots}: ${b.ok ? "up" : "FAILED"} in ${ms(b.ms)}${b.fds === undefined ? "" : `, broker holds ${b.fds} fds`}${b.error ? ` (${b.error})` : ""}`);
  }
  const ok = results.filter((b) => b.ok).length;
  console.log(`\ncold up at ${tenants} tenants: ${ok}/${boots} booted; wall ${results.map((b) => ms(b.ms)).join(", ")}`);
  writeResult("cold-boot", { tenants, batch, addMs: round(addMs), boots: results.map((b) => ({ ...b, ms: round(b.ms) })) });
  if (ok < boots) process.exitCode = 1;
});
