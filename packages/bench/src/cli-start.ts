/**
 * What every `cotal` command pays before it does anything (issue 35): `cotal --version`, `cotal --help` and
 * `cotal status` on a stopped root, each a fresh process, against `node -e 0` in the same run. The arms take
 * turns, their order rotated each round, so the machine's drift falls on all of them; ratios and differences
 * to node are taken pair by pair (same round), then their median. Every arm runs behind the same preloaded
 * probe (lib/first-io-probe.ts), which reports its CPU time and, for `status`, the verb's own start: process
 * start to its first read under the root, against plain `node` reading the same file. `node -e 0 (no probe)`
 * shows what the probe itself costs. `--baseline-cli` adds the cotal arms for another build (an older
 * bundle), so a before/after pair comes from one run. The CLI compiles its chunks from V8's cached code of
 * an earlier run (packages/cli/src/code-cache.ts), which the warm-up writes; `status, no code cache`
 * (NODE_DISABLE_COMPILE_CACHE=1) shows a verb's first run after a build.
 *
 *   node packages/bench/dist/cli-start.js [--runs 20] [--cli packages/cli/dist/bundle/cotal.js] [--baseline-cli <other cotal.js>]
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { down } from "@cotal/core";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { startCotalRoot } from "./lib/cotal-root.js";
import { REPO_ROOT, writeResult } from "./lib/out.js";
import { median, ms, round, summarize, table } from "./lib/stats.js";

const args = parseArgs();
const runs = args.int("runs", 20);
const cli = resolve(args.str("cli", join(REPO_ROOT, "packages", "cli", "dist", "bundle", "cotal.js")));
const baselineArg = args.str("baseline-cli", "");
const baselineCli = baselineArg ? resolve(baselineArg) : undefined;
const PROBE = fileURLToPath(new URL("./lib/first-io-probe.js", import.meta.url));

interface Arm {
  label: string;
  argv: string[];
  /** Extra environment (the no-code-cache arm). */
  env?: Record<string, string>;
  /** Behind the probe: its CPU time and first read are read, its wall time is not quoted. */
  probed: boolean;
}

/** One run: wall ms (spawn to exit, seen from here), the probe's CPU ms at exit and its first read under the root. */
interface Sample {
  wall: number;
  cpu: number;
  readWall: number;
  readCpu: number;
}

function runOnce(arm: Arm, root: string): Sample {
  const argv = arm.probed ? ["--import", PROBE, ...arm.argv] : arm.argv;
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, argv, { encoding: "utf8", env: { ...process.env, ...arm.env, COTAL_BENCH_PROBE_ROOT: root }, maxBuffer: 1 << 24 });
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.error) throw r.error;
  const line = (kind: string): number[] => (r.stderr.split("\n").find((l) => l.startsWith(`${kind} `)) ?? "").split(" ").slice(1).map(Number);
  const [, cpu = Number.NaN] = line("exit");
  const [readWall = Number.NaN, readCpu = Number.NaN] = line("first-read");
  if (arm.probed && Number.isNaN(cpu)) throw new Error(`${arm.label}: the probe printed nothing (exit ${r.status}): ${r.stderr.slice(-400)}`);
  return { wall, cpu, readWall, readCpu };
}

/** A command as two arms: bare (its wall time) and behind the probe (its CPU time, its first read). */
const pair = (label: string, argv: string[], env?: Record<string, string>): [Arm, Arm] => [
  { label, argv, probed: false, ...(env ? { env } : {}) },
  { label: `${label} [probe]`, argv, probed: true, ...(env ? { env } : {}) },
];

interface Row {
  arm: string;
  figure: string;
  median: number;
  min: number;
  max: number;
  vsNode: number | null;
  overNodeMs: number | null;
  vsBaseline: number | null;
}

const pairedMedian = (xs: number[], ref: number[], f: (x: number, r: number) => number): number => median(xs.map((x, i) => f(x, ref[i] as number)));

/** A figure's summary and, against the same rounds of node's (and the baseline CLI's) figure, the median ratio and difference. */
function row(arm: string, figure: string, xs: number[], node?: number[], baseline?: number[]): Row {
  const s = summarize(xs);
  return {
    arm,
    figure,
    median: s.median,
    min: s.min,
    max: s.max,
    vsNode: node ? round(pairedMedian(xs, node, (x, r) => x / r), 2) : null,
    overNodeMs: node ? round(pairedMedian(xs, node, (x, r) => x - r), 1) : null,
    vsBaseline: baseline ? round(pairedMedian(xs, baseline, (x, r) => x / r), 2) : null,
  };
}

const COMMANDS = (bundle: string, root: string): [string, string[]][] => [
  ["--version", [bundle, "--version"]],
  ["--help", [bundle, "--help"]],
  ["status (stopped root)", [bundle, "--root", root, "status"]],
];

await runBench(async () => {
  for (const f of [cli, baselineCli]) if (f && !existsSync(f)) throw new Error(`no CLI bundle at ${f}: run pnpm build`);
  const { root, layout } = await startCotalRoot("start");
  await down({ root }); // a stopped root: status reads its files and asks no broker
  const [node, nodeProbed] = pair("node -e 0", ["-e", "0"]);
  const nodeRead: Arm = { label: "node reading a root file [probe]", argv: ["-e", `require("node:fs").readFileSync(${JSON.stringify(layout.brokerFile)})`], probed: true };
  const cotal = [...COMMANDS(cli, root).map(([what, argv]) => pair(`cotal ${what}`, argv)), pair("cotal status (stopped root), no code cache", [cli, "--root", root, "status"], { NODE_DISABLE_COMPILE_CACHE: "1" })];
  const baseline = baselineCli ? COMMANDS(baselineCli, root).map(([what, argv]) => pair(`baseline ${what}`, argv)) : [];
  const all = [node, nodeProbed, nodeRead, ...cotal.flat(), ...baseline.flat()];
  const samples = new Map<string, Sample[]>(all.map((a) => [a.label, []]));
  for (const a of all) runOnce(a, root); // one warm-up each: the page cache and the CLI's V8 code cache
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < all.length; k++) {
      const a = all[(i + k) % all.length] as Arm;
      samples.get(a.label)?.push(runOnce(a, root));
    }
  }
  const of = (a: Arm | undefined, f: keyof Sample): number[] | undefined => (a ? (samples.get(a.label) ?? []).map((s) => s[f]) : undefined);
  const rows: Row[] = [row(node.label, "wall", of(node, "wall") ?? []), row(nodeProbed.label, "cpu", of(nodeProbed, "cpu") ?? [])];
  for (const [k, set] of [cotal, baseline].entries()) {
    set.forEach(([bare, probed], i) => {
      const [bBare, bProbed] = k === 0 ? (baseline[i] ?? []) : [];
      rows.push(row(bare.label, "wall", of(bare, "wall") ?? [], of(node, "wall"), of(bBare, "wall")), row(probed.label, "cpu", of(probed, "cpu") ?? [], of(nodeProbed, "cpu"), of(bProbed, "cpu")));
      if (bare.label.includes("status (stopped root)")) {
        rows.push(
          row(probed.label, "start to first read, wall", of(probed, "readWall") ?? [], of(nodeRead, "readWall"), of(bProbed, "readWall")),
          row(probed.label, "start to first read, cpu", of(probed, "readCpu") ?? [], of(nodeRead, "readCpu"), of(bProbed, "readCpu")),
        );
      }
    });
  }
  rows.push(row(nodeRead.label, "start to first read, wall", of(nodeRead, "readWall") ?? []), row(nodeRead.label, "start to first read, cpu", of(nodeRead, "readCpu") ?? []));
  const cell = (x: number | null, f: (x: number) => string): string => (x === null ? "" : f(x));
  console.log(`${runs} rounds, every arm once a round (order rotated); ms; "vs node", "over node" and "vs baseline" are medians of each round's pair`);
  console.log(table(["arm", "figure", "median", "min", "max", "vs node", "over node", "vs baseline"], rows.map((r) => [r.arm, r.figure, ms(r.median), ms(r.min), ms(r.max), cell(r.vsNode, (x) => `${x.toFixed(2)}×`), cell(r.overNodeMs, ms), cell(r.vsBaseline, (x) => `${x.toFixed(2)}×`)])));
  console.log("wall: spawn to exit, bare; cpu: user + system, behind the probe, against `node -e 0` behind it; a verb's start: against `node reading a root file` behind it.");
  console.log("targets (issue 35): cotal --help and --version <= 100 ms; a verb's own start (process start to its first I/O) <= 150 ms.");
  console.log(`wrote ${writeResult("cli-start", { runs, cli, baselineCli: baselineCli ?? null, rows })}`);
});
