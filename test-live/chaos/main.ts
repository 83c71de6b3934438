import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { repoRoot } from "@cotal/harness";
import { runOnce, type RunResult } from "./run.js";
import { runSeed } from "./rng.js";
import { SCENARIOS } from "./verbs.js";
import { chaosServerBin } from "./driver.js";

// scripts/chaos.sh [runs] [verb…]: per verb, one unkilled calibration run (its duration is the kill
// window), then `runs` runs each SIGKILLing cotal or nats-server at a uniform moment of that window.

const [runsArg, ...verbArgs] = process.argv.slice(2);
const runs = Number(runsArg ?? 3);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`usage: scripts/chaos.sh [runs] [verb…]   verbs: ${SCENARIOS.map((s) => s.verb).join(" ")}`);
  process.exit(2);
}
const unknown = verbArgs.filter((v) => !SCENARIOS.some((s) => s.verb === v));
if (unknown.length) {
  console.error(`chaos: unknown verb ${unknown.join(", ")}; verbs: ${SCENARIOS.map((s) => s.verb).join(" ")}`);
  process.exit(2);
}
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
const only = process.env.CHAOS_ONLY_RUN ? Number(process.env.CHAOS_ONLY_RUN) : undefined; // replay one run
const fixedWindow = process.env.CHAOS_WINDOW_MS ? Number(process.env.CHAOS_WINDOW_MS) : undefined;
const scenarios = verbArgs.length ? SCENARIOS.filter((s) => verbArgs.includes(s.verb)) : SCENARIOS;
const outDir = resolve(process.env.CHAOS_OUT ?? join(repoRoot(), ".test-results", "chaos"));
mkdirSync(outDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, "-");

const clip = (s: string): string => (s.length > 4_000 ? `${s.slice(0, 1_000)}\n…\n${s.slice(-3_000)}` : s);
const secretFree = (s: string): string => s.replace(/\bS[OAUNC][A-Z2-7]{50,}\b/g, "<seed>").replace(/eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_.-]+/g, "<jwt>");

function line(r: RunResult): string {
  const k = r.kill ? `${r.kill.planned.target}@${r.kill.planned.atMs}ms → ${r.kill.what}` : "no kill (calibration)";
  const rc = r.removedCred ? ` removed-cred ${r.removedCred.successesAfterWindow}/${r.removedCred.attempts} after window@${r.removedCred.windowStartMs}ms` : "";
  return `${r.failures.length ? "FAIL" : "ok  "} ${r.verb}#${r.run} seed=${r.seed} ${k} exit=${r.verbExit} steps=${r.recoverySteps}${r.intentRerun ? " +re-run" : ""}${rc} ${(r.durationMs / 1000).toFixed(1)}s${r.failures.length ? `\n       ${r.failures.join("\n       ")}` : ""}`;
}

// Verbs run in CHAOS_LANES lanes (default 2), each verb's runs in turn in its lane: every run has its
// own root, port and servers, and its calibration shares the load its kill runs see. Seeds are per
// verb and run, so a replay (CHAOS_ONLY_RUN) draws the same kill whichever lane ran it.
const lanes = Number(process.env.CHAOS_LANES ?? 2);
if (!Number.isInteger(lanes) || lanes < 1) {
  console.error(`chaos: CHAOS_LANES must be a whole number ≥ 1, not ${process.env.CHAOS_LANES}`);
  process.exit(2);
}
const all: RunResult[] = [];
console.log(`chaos: seed ${seed} (replay: CHAOS_SEED=${seed}), ${runs} run(s) per verb, verbs ${scenarios.map((s) => s.verb).join(" ")}, ${lanes} lane(s)`);
async function verbRuns(sc: (typeof scenarios)[number]): Promise<void> {
  const cal = await runOnce(sc, 0, runSeed(seed, sc.verb, 0), undefined);
  all.push(cal);
  console.log(line(cal));
  const window = fixedWindow ?? Math.max(cal.verbMs, 50);
  for (let i = 1; i <= runs; i++) {
    if (only !== undefined && i !== only) continue;
    const r = await runOnce(sc, i, runSeed(seed, sc.verb, i), window);
    r.facts.windowMs = window;
    all.push(r);
    console.log(line(r));
  }
}
// A verb whose set-up threw outside a run (a temp root, a port) fails alone: the other lane finishes
// its verbs, so its brokers are stopped and the report is still written.
const laneErrors: string[] = [];
const queue = [...scenarios];
await Promise.all(
  Array.from({ length: Math.min(lanes, queue.length) }, async () => {
    for (let sc = queue.shift(); sc; sc = queue.shift()) {
      try {
        await verbRuns(sc);
      } catch (err) {
        const why = secretFree((err as Error).message);
        laneErrors.push(`${sc.verb}: ${why}`);
        console.log(`FAIL ${sc.verb}: the driver itself failed: ${why}`);
      }
    }
  }),
);

const rows = scenarios.map((sc) => {
  const rs = all.filter((r) => r.verb === sc.verb && !r.calibration);
  const cal = all.find((r) => r.verb === sc.verb && r.calibration);
  const rc = rs.filter((r) => r.removedCred);
  return {
    verb: sc.verb,
    windowMs: cal?.verbMs ?? 0,
    runs: rs.length,
    converged: rs.filter((r) => r.converged).length,
    failed: rs.filter((r) => r.failures.length > 0).length + (cal && cal.failures.length ? 1 : 0),
    kills: `${rs.filter((r) => r.kill?.planned.target === "cotal").length} cotal / ${rs.filter((r) => r.kill?.planned.target === "nats").length} nats`,
    missed: rs.filter((r) => r.kill?.firedAtMs === undefined).length,
    reruns: rs.filter((r) => r.intentRerun).length,
    steps: rs.length ? `${Math.min(...rs.map((r) => r.recoverySteps))}-${Math.max(...rs.map((r) => r.recoverySteps))}` : "-",
    removedCred: rc.length ? `${rc.reduce((n, r) => n + (r.removedCred?.successesAfterWindow ?? 0), 0)} / ${rc.reduce((n, r) => n + (r.removedCred?.attempts ?? 0), 0)}` : "-",
    failures: [...(cal && cal.failures.length ? [cal] : []), ...rs.filter((r) => r.failures.length)].map(
      (r) => `run ${r.run} ${r.kill ? `kill ${r.kill.planned.target}@${r.kill.planned.atMs}ms (${r.kill.what})` : "calibration"}: ${r.failures.join("; ")}\n      replay: CHAOS_SEED=${seed} CHAOS_WINDOW_MS=${cal?.verbMs ?? 0} CHAOS_ONLY_RUN=${r.run} scripts/chaos.sh ${Math.max(r.run, 1)} ${sc.verb}`,
    ),
  };
});
const head = ["verb", "window", "runs", "converged", "failed", "kills", "missed", "re-runs", "steps", "removed-cred ok-after-commit/attempts"];
const table = rows.map((r) => [r.verb, `${r.windowMs}ms`, r.runs, r.converged, r.failed, r.kills, r.missed, r.reruns, r.steps, r.removedCred].map(String));
const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => t[i]?.length ?? 0)));
const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
console.log(`\n${fmt(head)}\n|${widths.map((w) => "-".repeat(w + 2)).join("|")}|\n${table.map(fmt).join("\n")}`);
for (const r of rows) for (const f of r.failures) console.log(`  ${r.verb}: ${f}`);

const doc = {
  at: new Date().toISOString(),
  seed,
  runsPerVerb: runs,
  natsServer: chaosServerBin(),
  recoveryCap: Number(process.env.CHAOS_RECOVERY_CAP ?? 12),
  summary: rows,
  driverErrors: laneErrors,
  runs: all.map((r) => ({ ...r, steps: r.steps.map((s) => ({ ...s, stdout: secretFree(clip(s.stdout)), stderr: secretFree(clip(s.stderr)) })) })),
};
const file = join(outDir, `chaos-${stamp}.json`);
writeFileSync(file, `${JSON.stringify(doc, null, 1)}\n`);
writeFileSync(join(outDir, "latest.json"), `${JSON.stringify(doc, null, 1)}\n`);
console.log(`\nchaos: wrote ${file}`);
process.exit(all.some((r) => r.failures.length > 0) || laneErrors.length > 0 ? 1 : 0);
