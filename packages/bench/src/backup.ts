/**
 * The offline per-space backup and restore (after `down --preserve-state`): a small space backed up
 * alone, then again next to a sibling holding `--sibling-mb` of its own data, in the same run, back
 * to back (BENCHMARKS.md; issue 16's target: ≤ 1.2× with the sibling). Also prints `cp -r` of the
 * whole store and the bytes the clone copies (the free disk a backup needs).
 *
 *   node packages/bench/dist/backup.js [--mb 1] [--sibling-mb 512] [--runs 3]
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { down, spaceAdd, spaceBackup, spaceRestore, up } from "@cotal/core";
import { deleteSpaceStreams } from "@cotal/core/provision";
import { loadSpaceAccount } from "@cotal/core/root";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { fillEvents } from "./lib/fill-events.js";
import { startCotalRoot, type BenchRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const mb = args.int("mb", 1);
const siblingMb = args.int("sibling-mb", 512);
const runs = args.int("runs", 3);

const seconds = async (fn: () => Promise<unknown> | unknown): Promise<number> => {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
};
const du = (path: string): number => Number(execFileSync("du", ["-sb", path]).toString().split("\t")[0]);


interface Arm {
  backup: number[];
  restore: number[];
  cp: number[];
  storeBytes: number;
  cloneBytes: number;
}

/** One arm's root: `bench` (the measured space) and, for the sibling arm, `sibling` filled with `siblingSize` MB; left preserved-stopped. */
async function armRoot(arm: "alone" | "sibling", siblingSize: number): Promise<BenchRoot> {
  const r = await startCotalRoot(`backup-${arm}`);
  await spaceAdd({ root: r.root, names: ["bench", "sibling"], quota: { disk: (mb + siblingMb + 64) * 1024 * 1024 } });
  await fillEvents(r.started.url, r.layout, "bench", mb);
  if (siblingSize > 0) await fillEvents(r.started.url, r.layout, "sibling", siblingSize);
  await down({ root: r.root, preserveState: true });
  return r;
}

await runBench(async () => {
  // Two roots, the same small space in each, one with a large sibling; their backups interleave
  // (alternating which goes first) so neither arm gets the warm caches or the quiet machine alone.
  const roots = { alone: await armRoot("alone", 0), sibling: await armRoot("sibling", siblingMb) };
  const arms: Record<"alone" | "sibling", Arm> = {
    alone: { backup: [], restore: [], cp: [], storeBytes: 0, cloneBytes: 0 },
    sibling: { backup: [], restore: [], cp: [], storeBytes: 0, cloneBytes: 0 },
  };
  for (const arm of ["alone", "sibling"] as const) {
    const r = roots[arm];
    const account = loadSpaceAccount(r.layout, "bench");
    if (!account) throw new Error("no bench account");
    arms[arm].storeBytes = du(r.layout.storeDir);
    // What the clone copies now: the tenant's own account directory (backup/attempt.ts cloneSpaceStore).
    arms[arm].cloneBytes = du(join(r.layout.storeDir, "jetstream", account.publicKey));
    // `cp -r` of the whole store once per arm, outside the timed loop: its writeback would land in the backups' timings.
    const copy = join(r.root, "..", "plain-copy");
    arms[arm].cp.push(await seconds(() => execFileSync("cp", ["-r", r.layout.storeDir, copy])));
    rmSync(copy, { recursive: true, force: true });
  }
  execFileSync("sync");
  let artifactBytes = 0;
  for (let i = 0; i < runs; i++) {
    for (const arm of i % 2 === 0 ? (["alone", "sibling"] as const) : (["sibling", "alone"] as const)) {
      const r = roots[arm];
      const account = loadSpaceAccount(r.layout, "bench");
      if (!account) throw new Error("no bench account");
      const out = join(r.root, "..", `artifact-${i}`);
      arms[arm].backup.push(await seconds(async () => (artifactBytes = (await spaceBackup({ root: r.root, space: "bench", out, mode: "offline" })).bytes)));
      // Empty the namespace (the artifact then restores into it) with the broker briefly back up.
      const resumed = await up({ root: r.root, detach: true });
      await deleteSpaceStreams(resumed.url, account);
      await down({ root: r.root, preserveState: true });
      arms[arm].restore.push(await seconds(() => spaceRestore({ root: r.root, space: "bench", from: out, mode: "offline" })));
      rmSync(out, { recursive: true, force: true });
    }
  }
  for (const r of Object.values(roots)) await up({ root: r.root, detach: true });

  const m = (xs: number[]) => median(xs);
  const MB = (b: number) => `${(b / 1_048_576).toFixed(1)} MB`;
  const rows = (["alone", "sibling"] as const).map((arm) => [
    arm === "alone" ? "alone" : `next to a ${siblingMb} MB sibling`,
    MB(arms[arm].storeBytes),
    MB(arms[arm].cloneBytes),
    `${m(arms[arm].cp).toFixed(2)} s`,
    `${m(arms[arm].backup).toFixed(2)} s`,
    `${m(arms[arm].restore).toFixed(2)} s`,
  ]);
  console.log(`space bench: ${mb} MB of 16 KiB random events; artifact ${MB(artifactBytes)}; ${runs} run(s) per arm, medians; offline (after down --preserve-state)`);
  console.log(table(["arm", "store", "clone copies", "cp -r of the store", "space backup", "space restore"], rows));
  const backupRatio = m(arms.sibling.backup) / m(arms.alone.backup);
  const restoreRatio = m(arms.sibling.restore) / m(arms.alone.restore);
  console.log(`offline backup next to the sibling ÷ alone: ${backupRatio.toFixed(2)} (target ≤ 1.2); restore: ${restoreRatio.toFixed(2)}`);
  writeResult("backup", { mb, siblingMb, runs, artifactBytes, arms, backupRatio: round(backupRatio, 3), restoreRatio: round(restoreRatio, 3) });
});
