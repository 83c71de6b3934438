/**
 * `space add` latency at 10 / 100 / 1000 (or 10,000 with `--trust-only` fills) existing tenants, per saga step, in-process (no CLI start-up),
 * against the bare "render + rename + SIGHUP + proof" baseline at the same tenant count, the two arms
 * alternating run by run (saga first, then baseline first).
 *
 *   node packages/bench/dist/add-latency.js [--tenants 10,100,1000] [--runs 20] [--trust-only]
 */
import { GUARDS_ON } from "@cotal/core/light";
import { performance } from "node:perf_hooks";
import { spaceAdd, type SagaTiming } from "@cotal/core";
import { readRuntime, reloadAndProve, renderRoot } from "@cotal/core/broker";
import { certainInventory, loadBrokerTrust, toAccountRecord, writeFileAtomic } from "@cotal/core/root";
import { createAccountTrust } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { trustOnly } from "./lib/trust-only.js";
import { runBench } from "./lib/cleanup.js";
import { names, reloadCount, startCotalRoot, type BenchRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { ms, round, summarize, table, type Summary } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [10, 100, 1000]);
/** Fill each level through the saga only (no streams): 10,000 tenants' streams exceed a 20,000-fd broker. */
const fillTrustOnly = args.flag("trust-only");
const runs = args.int("runs", 20);

/** What one in-process `spaceAdd` of one name costs, split by the saga's own onTiming reports. */
interface AddRun {
  total: number;
  /** spaceAdd start → the saga's lease step begins: live session (authority connect), decision read, lock, refusal checks. */
  pre: number;
  /** spaceAdd start → release reported: the whole trust change (everything but provisioning). */
  saga: number;
  /** release → spaceAdd returns: observer creds, provisionSpace (connect + 1 stream + 2 KV), session close. */
  provision: number;
  steps: Partial<Record<SagaTiming, number>>;
  /** Time between one reported step's end and the next one's start, keyed "after-<step>" (work the saga does not time). */
  gaps: Record<string, number>;
}

const STEP_ORDER: SagaTiming[] = ["read", "lease", "decide", "claim", "materialise", "render-stage", "promote", "reload-proof", "reconnect", "commit", "release"];

async function timedAdd(root: string, name: string): Promise<AddRun> {
  const events: { step: SagaTiming; ms: number; at: number }[] = [];
  const t0 = performance.now();
  const res = await spaceAdd({ root, names: [name], onTiming: (step, d) => events.push({ step, ms: d, at: performance.now() }) });
  const t1 = performance.now();
  if (res.outcome !== "committed" || res.provisioned.length !== 1) throw new Error(`space add ${name}: outcome ${res.outcome}, provisioned ${res.provisioned.length}`);
  const first = events[0];
  const release = events.find((e) => e.step === "release");
  if (!first || !release) throw new Error("the saga reported no timings");
  const steps: Partial<Record<SagaTiming, number>> = {};
  const gaps: Record<string, number> = {};
  events.forEach((e, i) => {
    steps[e.step] = (steps[e.step] ?? 0) + e.ms;
    const prev = events[i - 1];
    if (prev) gaps[`after-${prev.step}`] = (gaps[`after-${prev.step}`] ?? 0) + Math.max(0, e.at - e.ms - prev.at);
  });
  return { total: t1 - t0, pre: first.at - first.ms - t0, saga: release.at - t0, provision: t1 - release.at, steps, gaps };
}

interface BaseRun {
  total: number;
  render: number;
  write: number;
  reload: number;
}

/**
 * One bare run: render (records already in memory, plus one freshly minted account) → writeFileAtomic
 * → SIGHUP → proof line; then the committed config is put back (byte-identical render of the
 * inventory, reloaded, not counted) so the next saga add finds a clean root.
 */
async function baselineOnce(br: BenchRoot, i: number): Promise<BaseRun> {
  const runtime = readRuntime(br.layout);
  if (!runtime) throw new Error("no broker runtime");
  const broker = loadBrokerTrust(br.layout);
  const records = certainInventory(br.layout, GUARDS_ON);
  let out: BaseRun | undefined;
  let failure: unknown;
  try {
    const extra = toAccountRecord(createAccountTrust(broker.operator, `baseline${i}`, { kind: "space" }));
    const t0 = performance.now();
    const rendered = renderRoot(br.layout, [...records, extra], GUARDS_ON);
    const t1 = performance.now();
    writeFileAtomic(br.layout.serverConf, rendered.text);
    const t2 = performance.now();
    const v = await reloadAndProve(runtime);
    const t3 = performance.now();
    if (v.outcome !== "reloaded") throw new Error(`baseline reload ${v.outcome}`);
    out = { total: t3 - t0, render: t1 - t0, write: t2 - t1, reload: t3 - t2 };
  } catch (err) {
    failure = err;
  }
  writeFileAtomic(br.layout.serverConf, renderRoot(br.layout, undefined, GUARDS_ON).text);
  const v = await reloadAndProve(runtime);
  if (failure !== undefined || !out) throw failure;
  if (v.outcome !== "reloaded") throw new Error(`restoring the committed config: reload ${v.outcome}`);
  return out;
}

type LevelRow = { pre: Summary; saga: Summary; provision: Summary; total: Summary; baseline: { total: Summary; render: Summary; write: Summary; reload: Summary } };

/** One level's phases against the bare baseline, as a table. */
function levelTable(row: LevelRow, stepRows: readonly (readonly [string, Summary])[], gapRows: readonly (readonly [string, Summary])[]): string {
  const line = (label: string, v: Summary) => [label, ms(v.median), ms(v.p90), ms(v.min), ms(v.max)];
  return table(
    ["phase", "median", "p90", "min", "max"],
    [
      line("session+read+lock (pre)", row.pre),
      ...stepRows.map(([s, v]) => line(s, v)),
      ...gapRows.map(([s, v]) => line(`(untimed ${s})`, v)),
      line("= saga (start → release)", row.saga),
      line("provisioning (+creds, close)", row.provision),
      line("= total spaceAdd", row.total),
      line("baseline render", row.baseline.render),
      line("baseline write+rename", row.baseline.write),
      line("baseline SIGHUP+proof", row.baseline.reload),
      line("= baseline", row.baseline.total),
    ],
  );
}

const pick = (rs: AddRun[], f: (r: AddRun) => number | undefined): Summary => summarize(rs.map((r) => f(r) ?? 0));

await runBench(async () => {
  const br = await startCotalRoot("add");
  let existing = 1; // `default`
  let seq = 0;
  const results: Record<string, unknown>[] = [];
  for (const level of levels) {
    if (level > existing) {
      const t0 = performance.now();
      const fill = names("fill", seq, level - existing);
      seq += fill.length;
      for (let i = 0; i < fill.length; i += 2500) {
        const part = fill.slice(i, i + 2500);
        if (fillTrustOnly) await trustOnly(br.root, part);
        else await spaceAdd({ root: br.root, names: part });
      }
      console.log(`filled to ${level} tenants (${fill.length} added in batches of 2,500${fillTrustOnly ? ", trust only" : ""}) in ${ms(performance.now() - t0)}`);
      existing = level;
    }
    const atStart = existing;
    await timedAdd(br.root, `warm${String(level).padStart(5, "0")}`); // warm-up (JIT, connections), not counted
    existing++;
    // The arms alternate which goes first, so a drift in the machine's load (or the server's) falls on both.
    const adds: AddRun[] = [];
    const base: BaseRun[] = [];
    for (let r = 0; r < runs; r++) {
      if (r % 2 === 1) base.push(await baselineOnce(br, r));
      adds.push(await timedAdd(br.root, names(`at${level}x`, r, 1)[0] as string));
      existing++;
      if (r % 2 === 0) base.push(await baselineOnce(br, r));
    }

    const stepRows = STEP_ORDER.filter((s) => adds.some((a) => a.steps[s] !== undefined)).map((s) => [s, pick(adds, (a) => a.steps[s])] as const);
    const gapKeys = [...new Set(adds.flatMap((a) => Object.keys(a.gaps)))];
    const gapRows = gapKeys.map((k) => [k, pick(adds, (a) => a.gaps[k])] as const).filter(([, v]) => v.max >= 1);
    const sagaS = pick(adds, (a) => a.saga);
    const baseS = summarize(base.map((b) => b.total));
    const overhead = round(sagaS.median - baseS.median);
    const ratio = round(sagaS.median / baseS.median, 3);
    const row = {
      tenants: atStart,
      tenantsAtEnd: existing,
      runs,
      total: pick(adds, (a) => a.total),
      pre: pick(adds, (a) => a.pre),
      steps: Object.fromEntries(stepRows),
      untimed: Object.fromEntries(gapRows),
      saga: sagaS,
      provision: pick(adds, (a) => a.provision),
      baseline: { total: baseS, render: summarize(base.map((b) => b.render)), write: summarize(base.map((b) => b.write)), reload: summarize(base.map((b) => b.reload)) },
      overheadMs: overhead,
      ratio,
    };
    results.push(row);
    console.log(`\nspace add at ${atStart} existing tenants (${runs} runs, in-process; tenants grow to ${existing} during the runs)`);
    console.log(levelTable(row, stepRows, gapRows));
    console.log(`saga overhead over the bare baseline: ${ms(overhead)} (×${ratio})`);
  }

  const first = results.find((r) => r.tenants === 10) as { overheadMs: number } | undefined;
  const last = results.find((r) => r.tenants === 1000) as { ratio: number } | undefined;
  const targets = {
    overheadAt10: first ? { target: "≤ 15 ms", value: first.overheadMs, met: first.overheadMs <= 15 } : "not measured",
    ratioAt1000: last ? { target: "≤ 1.3×", value: last.ratio, met: last.ratio <= 1.3 } : "not measured",
  };
  console.log(`\ntargets: ${JSON.stringify(targets)}`);
  console.log(`reloads in the root's log: ${reloadCount(br.layout)}`);
  console.log(`wrote ${writeResult("add-latency", { levels, runs, results, targets })}`);
});
