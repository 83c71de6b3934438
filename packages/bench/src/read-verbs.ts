/**
 * `cotal status --json` and `cotal space list --json` at N tenants: a real root grown by group-commit
 * `spaceAdd` batches (default template, provisioned), then each read verb as a fresh CLI process
 * (what an operator or a monitor runs) and `status()` in-process. 10,000 provisioned tenants need
 * ~30,000 open files on nats-server 2.10+ (60,000 on 2.9); where the hard limit is lower, `--trust-only`
 * trusts the batches through the saga (claim, materialise, render, reload, proof, commit) and skips
 * provisioning, which the read verbs do not look at.
 *
 *   node packages/bench/dist/read-verbs.js [--tenants 1000,5000,10000] [--runs 3] [--batch 2500] [--trust-only]
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { spaceAdd, status } from "@cotal/core";
import { trustOnly as trust } from "./lib/trust-only.js";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { names, startCotalRoot } from "./lib/cotal-root.js";
import { REPO_ROOT, writeResult } from "./lib/out.js";
import { ms, summarize, table } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [1000, 5000, 10000]);
const runs = args.int("runs", 3);
const batch = args.int("batch", 2500);
const trustOnly = args.flag("trust-only");

const CLI = join(REPO_ROOT, "packages", "cli", "dist", "bundle", "cotal.js");

function cli(root: string, argv: string[]): { ms: number; bytes: number } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...argv, "--root", root], { encoding: "utf8", maxBuffer: 1 << 30 });
  const t = performance.now() - t0;
  if (r.status !== 0) throw new Error(`cotal ${argv.join(" ")} exited ${r.status}: ${r.stderr}`);
  return { ms: t, bytes: r.stdout.length };
}

await runBench(async () => {
  const { root } = await startCotalRoot("read");
  let have = 1;
  const rows: { tenants: number; addMs: number; statusCli: number[]; listCli: number[]; statusInProcess: number[]; statusBytes: number; listBytes: number }[] = [];
  for (const level of levels) {
    const t0 = performance.now();
    while (have < level) {
      const n = Math.min(batch, level - have);
      if (trustOnly) await trust(root, names("r", have, n));
      else await spaceAdd({ root, names: names("r", have, n) });
      have += n;
    }
    const addMs = performance.now() - t0;
    const statusCli: number[] = [];
    const listCli: number[] = [];
    const statusInProcess: number[] = [];
    let statusBytes = 0;
    let listBytes = 0;
    for (let i = 0; i < runs; i++) {
      const s = cli(root, ["status", "--json"]);
      statusCli.push(s.ms);
      statusBytes = s.bytes;
      const l = cli(root, ["space", "list", "--json"]);
      listCli.push(l.ms);
      listBytes = l.bytes;
      const t = performance.now();
      const rep = await status({ root });
      statusInProcess.push(performance.now() - t);
      if (rep.spaces.length !== level) throw new Error(`status lists ${rep.spaces.length} spaces, not ${level}`);
    }
    rows.push({ tenants: level, addMs, statusCli, listCli, statusInProcess, statusBytes, listBytes });
    console.log(`${level} tenants (grown in ${(addMs / 1000).toFixed(1)} s): status --json ${ms(summarize(statusCli).median)}, space list --json ${ms(summarize(listCli).median)}`);
  }
  console.log(
    table(
      ["tenants", "status --json (CLI) median / min", "space list --json (CLI) median / min", "status() in-process", "status bytes", "list bytes"],
      rows.map((r) => [
        String(r.tenants),
        `${ms(summarize(r.statusCli).median)} / ${ms(Math.min(...r.statusCli))}`,
        `${ms(summarize(r.listCli).median)} / ${ms(Math.min(...r.listCli))}`,
        ms(summarize(r.statusInProcess).median),
        String(r.statusBytes),
        String(r.listBytes),
      ]),
    ),
  );
  console.log(`wrote ${writeResult("read-verbs", { levels, runs, batch, trustOnly, rows })}`);
});
