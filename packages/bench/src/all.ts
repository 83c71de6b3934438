/**
 * `pnpm bench`: every benchmark with small defaults, one child process each (so one bench's brokers
 * and heap never colour the next). Extra arguments (`--runs 5`, `--n 200`) are passed to every script
 * and override the small defaults. Full-size runs: see BENCHMARKS.md.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const extra = process.argv.slice(2);
const SMALL: [string, string[]][] = [
  ["mint", ["--n", "1000"]],
  ["cli-start", ["--runs", "5"]],
  ["reload-cost", ["--tenants", "10,100,1000", "--runs", "3"]],
  ["add-latency", ["--tenants", "10,100", "--runs", "5"]],
  ["onboarding", ["--n", "200", "--per-tenant", "5"]],
  ["provision", ["--n", "200", "--runs", "1"]],
  ["backup", ["--mb", "1", "--sibling-mb", "128", "--runs", "1"]], // a small space alone, then next to a sibling
  ["validation", ["--tenants", "500", "--runs", "2"]],
  ["read-verbs", ["--tenants", "100,500", "--runs", "2", "--trust-only"]],
  ["cluster-onboarding", ["--n", "100", "--batch", "50"]],
  ["nsc", ["--n", "10"]], // nsc waits 1 s per account it pushes: keep it small
  ["one-add", ["--tenants", "100", "--runs", "2"]],
  ["material-publish", ["--tenants", "100,1000", "--runs", "3"]],
];

let failed = 0;
for (const [name, defaults] of SMALL) {
  console.log(`\n=== ${name} ${[...defaults, ...extra].join(" ")}`);
  const r = spawnSync(process.execPath, [join(here, `${name}.js`), ...defaults, ...extra], { stdio: "inherit" });
  if (r.status !== 0) {
    failed++;
    console.error(`${name} exited ${r.status ?? r.signal}`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
