/**
 * The online per-space backup and restore (issue 16) against natscli's `nats account backup` /
 * `nats account restore` on the same streams, in the same run, and against store size: the space
 * is backed up alone, then again next to a sibling holding `--sibling-mb` of its own data.
 *
 *   node packages/bench/dist/backup-online.js [--mb 32] [--sibling-mb 256] [--runs 3]
 *
 * `--alone-only` runs the alone arm only (a size curve). Each cotal run also prints where its
 * time went, phase by phase (the result's `phases`), with the quiesce's and the lift's saga steps.
 *
 * natscli is the one `infra/nats-server.sh cli-path` prints (NATS_CLI overrides). Its backup also
 * carries the two KV buckets cotal leaves out (ttl class, empty here), so its bytes are a little more.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { mintSpaceCreds, spaceAdd, spaceBackup, spaceRestore } from "@cotal/saga";
import { deleteSpaceStreams } from "@cotal/saga/provision";
import { loadSpaceAccount } from "@cotal/saga/root";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { fillEvents } from "./lib/fill-events.js";
import { startCotalRoot, type BenchRoot } from "./lib/cotal-root.js";
import { REPO_ROOT, writeResult } from "./lib/out.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const mb = args.int("mb", 32);
const siblingMb = args.int("sibling-mb", 256);
const runs = args.int("runs", 3);
const aloneOnly = args.flag("alone-only");
const natsCli = process.env.NATS_CLI ?? execFileSync("bash", [join(REPO_ROOT, "infra", "nats-server.sh"), "cli-path"], { encoding: "utf8" }).trim();

const seconds = async (fn: () => Promise<unknown> | unknown): Promise<number> => {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
};


async function emptyNamespace(r: BenchRoot, space: string): Promise<void> {
  const account = loadSpaceAccount(r.layout, space);
  if (!account) throw new Error(`no account ${space}`);
  await deleteSpaceStreams(r.started.url, account);
}

type Phases = { phase: string; ms: number }[];

/** One run's phases summed by name (a saga step may run twice in one saga, on a resume). */
function byPhase(phases: Phases | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of phases ?? []) out.set(p.phase, (out.get(p.phase) ?? 0) + p.ms);
  return out;
}

/** Median ms of every phase over the runs, in the order the first run met them; saga steps indented under their phase. */
function phaseRows(runs: Phases[]): string[][] {
  const maps = runs.map(byPhase);
  const names = [...new Set(runs.flatMap((r) => r.map((p) => p.phase)))];
  const top = names.filter((n) => !n.includes(": "));
  const total = median(maps.map((m) => [...m].filter(([n]) => !n.includes(": ")).reduce((a, [, v]) => a + v, 0)));
  return top.flatMap((n) => {
    const row = (name: string, label: string) => {
      const ms = median(maps.map((m) => m.get(name) ?? 0));
      return [label, ms.toFixed(0), `${((100 * ms) / total).toFixed(0)} %`];
    };
    return [row(n, n), ...names.filter((s) => s.startsWith(`${n}: `)).map((s) => row(s, `  ${s.slice(n.length + 2)}`))];
  }).concat([["total", total.toFixed(0), "100 %"]]);
}

interface Arm {
  cotalBackup: number[];
  natsBackup: number[];
  cotalRestore: number[];
  natsRestore: number[];
  backupPhases: Phases[];
  restorePhases: Phases[];
}

await runBench(async () => {
  const r = await startCotalRoot("backup-online");
  await spaceAdd({ root: r.root, names: ["bench", "sibling"], quota: { disk: (mb + siblingMb + 64) * 1024 * 1024 } });
  await fillEvents(r.started.url, r.layout, "bench", mb);
  const creds = mintSpaceCreds({ root: r.root, space: "bench", user: "natscli", admin: true, out: join(r.root, "..", "natscli.creds") }).path;
  const nats = (...a: string[]) => execFileSync(natsCli, ["--server", r.started.url, "--creds", creds, ...a], { stdio: ["ignore", "ignore", "pipe"] });

  const arm0 = (): Arm => ({ cotalBackup: [], natsBackup: [], cotalRestore: [], natsRestore: [], backupPhases: [], restorePhases: [] });
  const arms: Record<"alone" | "sibling", Arm> = { alone: arm0(), sibling: arm0() };
  let artifactBytes = 0;
  // --alone-only: no sibling arm (a size curve).
  const armNames = !aloneOnly ? (["alone", "sibling"] as const) : (["alone"] as const);
  for (const arm of armNames) {
    if (arm === "sibling") await fillEvents(r.started.url, r.layout, "sibling", siblingMb);
    for (let i = 0; i < runs; i++) {
      const out = join(r.root, "..", `cotal-${arm}-${i}`);
      const peer = join(r.root, "..", `natscli-${arm}-${i}`);
      // The two arms run back to back on the same streams, alternating which goes first.
      const order = i % 2 === 0 ? ["cotal", "nats"] : ["nats", "cotal"];
      for (const who of order) {
        if (who === "cotal") {
          arms[arm].cotalBackup.push(
            await seconds(async () => {
              const res = await spaceBackup({ root: r.root, space: "bench", out });
              artifactBytes = res.bytes;
              arms[arm].backupPhases.push((res as { phases?: Phases }).phases ?? []);
            }),
          );
        }
        else arms[arm].natsBackup.push(await seconds(() => nats("account", "backup", "--force", peer)));
      }
      for (const who of order) {
        await emptyNamespace(r, "bench");
        if (who === "cotal") {
          arms[arm].cotalRestore.push(
            await seconds(async () => {
              const res = await spaceRestore({ root: r.root, space: "bench", from: out });
              arms[arm].restorePhases.push((res as { phases?: Phases }).phases ?? []);
            }),
          );
        }
        else arms[arm].natsRestore.push(await seconds(() => nats("account", "restore", peer)));
      }
      rmSync(out, { recursive: true, force: true });
      rmSync(peer, { recursive: true, force: true });
    }
  }

  const m = (xs: number[]) => median(xs);
  const mbps = (s: number) => `${(mb / s).toFixed(1)} MB/s`;
  const rows = armNames.flatMap((arm) => [
    [`backup, ${arm === "alone" ? "alone" : `next to ${siblingMb} MB`}`, `${m(arms[arm].cotalBackup).toFixed(2)} s (${mbps(m(arms[arm].cotalBackup))})`, `${m(arms[arm].natsBackup).toFixed(2)} s (${mbps(m(arms[arm].natsBackup))})`, (m(arms[arm].natsBackup) / m(arms[arm].cotalBackup)).toFixed(2)],
    [`restore, ${arm === "alone" ? "alone" : `next to ${siblingMb} MB`}`, `${m(arms[arm].cotalRestore).toFixed(2)} s (${mbps(m(arms[arm].cotalRestore))})`, `${m(arms[arm].natsRestore).toFixed(2)} s (${mbps(m(arms[arm].natsRestore))})`, (m(arms[arm].natsRestore) / m(arms[arm].cotalRestore)).toFixed(2)],
  ]);
  console.log(`space bench: ${mb} MB of 16 KiB random events; artifact ${(artifactBytes / 1_048_576).toFixed(1)} MB; ${runs} run(s) per arm, medians`);
  console.log(table(["what", "cotal (online)", "nats account backup/restore", "cotal throughput ÷ natscli's"], rows));
  const siblingRatio = aloneOnly ? Number.NaN : m(arms.sibling.cotalBackup) / m(arms.alone.cotalBackup);
  for (const arm of armNames) {
    console.log(`\nwhere cotal's online backup goes (${arm}, median ms over ${runs} run(s); saga steps indented under their saga)`);
    console.log(table(["phase", "ms", "share"], phaseRows(arms[arm].backupPhases)));
    console.log(`\nwhere cotal's online restore goes (${arm}, median ms over ${runs} run(s))`);
    console.log(table(["phase", "ms", "share"], phaseRows(arms[arm].restorePhases)));
  }
  if (!aloneOnly) console.log(`cotal backup next to a ${siblingMb} MB sibling ÷ alone: ${siblingRatio.toFixed(2)} (target ≤ 1.2)`);
  writeResult("backup-online", { mb, siblingMb, runs, artifactBytes, arms, ...(aloneOnly ? {} : { siblingRatio: round(siblingRatio, 3) }) });
});
