/**
 * The online per-space backup (live by default; issue 29) and restore (issue 16) against natscli's `nats account backup` /
 * `nats account restore` on the same streams, in the same run, and against store size.
 *
 *   node packages/bench/dist/backup-online.js [--mb 16,64,256] [--sibling-mb 256] [--runs 3]
 *       [--alone-only] [--arms default,before,no-jsck]
 *
 * --mb         sizes of the space's events stream (a curve; the stream is topped up between sizes)
 * --sibling-mb after the curve, a sibling space gets this much data and every size runs again
 * --alone-only no sibling pass
 * --arms       cotal variants, each backed up and restored from its own artifact (ARMS below)
 * --natscli-check  also time `nats account backup --check` (the server's checksum pass, as cotal asks)
 *
 * Every run puts the arms and natscli back to back on the same streams, the order reversed on odd
 * runs; medians. Each arm's phases (the result's `phases`) are printed side by side, and the load
 * average at the start and end of each size.
 *
 * natscli is the one `infra/nats-server.sh cli-path` prints (NATS_CLI overrides). Its backup also
 * carries the KV bucket cotal leaves out (ttl class, empty here), so its bytes are a little more.
 */
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { mintSpaceCreds, spaceAdd, spaceBackup, spaceRestore } from "@cotal/core";
import type { RestoreOptions, SnapshotTuning } from "@cotal/core/backup";
import { deleteSpaceStreams } from "@cotal/core/provision";
import { loadSpaceAccount } from "@cotal/core/root";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { fillEvents } from "./lib/fill-events.js";
import { startCotalRoot, type BenchRoot } from "./lib/cotal-root.js";
import { REPO_ROOT, writeResult } from "./lib/out.js";
import { median, table } from "./lib/stats.js";

/** The cotal variants a run can compare; "default" is what `cotal space backup` does. */
const ARMS: Record<string, { what: string; tuning: SnapshotTuning; upload: RestoreOptions; quiesce?: boolean }> = {
  default: { what: "backup: live (the tenant untouched), the streams in parallel, each file flushed as it grows, jsck; restore: 4 chunks of up to 1 MiB in flight", tuning: {}, upload: {} },
  quiesce: { what: "default with --quiesce: the tenant's users revoked while its streams are read, lifted after (two proven reloads)", tuning: {}, upload: {}, quiesce: true },
  before: { what: "backup: one stream at a time, the whole file fsynced after its end marker, jsck; restore: one 512 KiB chunk per round trip (half a tenant user's 1 MiB max_payload, as it was)", tuning: { parallel: 1, snapshot: { earlyFlush: false } }, upload: { inFlight: 1, chunkSize: 512 * 1024 } },
  "no-early-flush": { what: "default, each snapshot file fsynced only after its end marker", tuning: { snapshot: { earlyFlush: false } }, upload: {} },
  "upload-serial": { what: "default, the restore's 1 MiB chunks one per round trip", tuning: {}, upload: { inFlight: 1 } },
  "in-flight-2": { what: "default, the restore with 2 chunks in flight", tuning: {}, upload: { inFlight: 2 } },
  "in-flight-8": { what: "default, the restore with 8 chunks in flight", tuning: {}, upload: { inFlight: 8 } },
  "upload-64k": { what: "default, the restore in 64 KiB chunks (natscli's), 16 in flight", tuning: {}, upload: { chunkSize: 64 * 1024, inFlight: 16 } },
  "upload-512k": { what: "default, the restore in 512 KiB chunks, 4 in flight", tuning: {}, upload: { chunkSize: 512 * 1024, inFlight: 4 } },
  "upload-128k": { what: "default, the restore in 128 KiB chunks, 8 in flight", tuning: {}, upload: { chunkSize: 128 * 1024, inFlight: 8 } },
  "no-jsck": { what: "default without the server's checksum pass", tuning: { snapshot: { check: false } }, upload: {} },
};

if (process.argv.includes("--help")) {
  console.log(`usage: node packages/bench/dist/backup-online.js [--mb 16,64,256] [--sibling-mb 256] [--runs 3] [--alone-only] [--arms ${Object.keys(ARMS).join(",")}] [--natscli-check]`);
  for (const [name, a] of Object.entries(ARMS)) console.log(`  arm ${name}: ${a.what}`);
  process.exit(0);
}

const args = parseArgs();
const sizes = [...args.list("mb", [32])].sort((a, b) => a - b);
const siblingMb = args.int("sibling-mb", 256);
const runs = args.int("runs", 3);
const aloneOnly = args.flag("alone-only");
const armNames = args.str("arms", "default").split(",").filter(Boolean);
/** The natscli rows: plain (the reference of every ratio) and, with --natscli-check, with the checksum pass cotal asks for. */
const peers = args.flag("natscli-check") ? ["natscli", "natscli --check"] : ["natscli"];
for (const a of armNames) if (!ARMS[a]) throw new Error(`--arms: unknown arm ${a}; known: ${Object.keys(ARMS).join(", ")}`);
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

/** One run's top-level phases summed by name (a saga's steps are left out: the saga's own row holds them). */
function byPhase(phases: Phases): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of phases) if (!p.phase.includes(": ")) out.set(p.phase, (out.get(p.phase) ?? 0) + p.ms);
  return out;
}

/** Median ms of every phase over the runs, one column per arm, in the order the first arm met them. */
function phaseRows(perArm: Phases[][]): string[][] {
  const maps = perArm.map((runsOf) => runsOf.map(byPhase));
  const names = [...new Set(perArm.flatMap((runsOf) => runsOf.flatMap((r) => [...byPhase(r).keys()])))];
  const cell = (arm: Map<string, number>[], name?: string) => median(arm.map((m) => (name ? (m.get(name) ?? 0) : [...m.values()].reduce((a, b) => a + b, 0)))).toFixed(0);
  return [...names.map((n) => [n, ...maps.map((arm) => cell(arm, n))]), ["total", ...maps.map((arm) => cell(arm))]];
}

interface Cell {
  backup: number[];
  restore: number[];
  backupPhases: Phases[];
  restorePhases: Phases[];
}

await runBench(async () => {
  const maxMb = sizes[sizes.length - 1] ?? 32;
  const r = await startCotalRoot("backup-online");
  await spaceAdd({ root: r.root, names: ["bench", "sibling"], quota: { disk: (maxMb + siblingMb + 64) * 1024 * 1024 } });
  const creds = mintSpaceCreds({ root: r.root, space: "bench", user: "natscli", admin: true, out: join(r.root, "..", "natscli.creds") }).path;
  const nats = (...a: string[]) => execFileSync(natsCli, ["--server", r.started.url, "--creds", creds, ...a], { stdio: ["ignore", "ignore", "pipe"] });
  const results: Record<string, unknown>[] = [];
  let filled = 0;
  const aloneBackup = new Map<number, number>();
  const passes = aloneOnly ? (["alone"] as const) : (["alone", "sibling"] as const);
  for (const pass of passes) {
    if (pass === "sibling") await fillEvents(r.started.url, r.layout, "sibling", siblingMb);
    for (const mb of sizes) {
      if (mb > filled) await fillEvents(r.started.url, r.layout, "bench", mb - filled);
      filled = Math.max(filled, mb);
      const load0 = loadavg()[0] ?? 0;
      const cells = new Map<string, Cell>([...armNames, ...peers].map((a) => [a, { backup: [], restore: [], backupPhases: [], restorePhases: [] }]));
      let artifactBytes = 0;
      for (let i = 0; i < runs; i++) {
        const order = [...armNames, ...peers];
        if (i % 2 === 1) order.reverse();
        const dirs = new Map(order.map((who) => [who, join(r.root, "..", `${who}-${pass}-${mb}-${i}`)]));
        for (const who of order) {
          const cell = cells.get(who) as Cell;
          const out = dirs.get(who) as string;
          if (who === "natscli") cell.backup.push(await seconds(() => nats("account", "backup", "--force", out)));
          else if (who === "natscli --check") cell.backup.push(await seconds(() => nats("account", "backup", "--force", "--check", out)));
          else {
            cell.backup.push(
              await seconds(async () => {
                const res = await spaceBackup({ root: r.root, space: "bench", out, tuning: ARMS[who]?.tuning ?? {}, ...(ARMS[who]?.quiesce ? { quiesce: true } : {}) });
                artifactBytes = res.bytes;
                cell.backupPhases.push((res as { phases?: Phases }).phases ?? []);
              }),
            );
          }
        }
        for (const who of order) {
          const cell = cells.get(who) as Cell;
          const from = dirs.get(who) as string;
          await emptyNamespace(r, "bench");
          if (who.startsWith("natscli")) cell.restore.push(await seconds(() => nats("account", "restore", from)));
          else {
            cell.restore.push(
              await seconds(async () => {
                const res = await spaceRestore({ root: r.root, space: "bench", from, upload: ARMS[who]?.upload ?? {} });
                cell.restorePhases.push((res as { phases?: Phases }).phases ?? []);
              }),
            );
          }
        }
        for (const d of dirs.values()) rmSync(d, { recursive: true, force: true });
      }
      const load1 = loadavg()[0] ?? 0;
      const peer = cells.get("natscli") as Cell;
      const rows = [...armNames, ...peers].map((who) => {
        const c = cells.get(who) as Cell;
        const b = median(c.backup);
        const s = median(c.restore);
        return [who, `${b.toFixed(3)} s (${(mb / b).toFixed(0)} MB/s)`, (median(peer.backup) / b).toFixed(2), `${s.toFixed(3)} s (${(mb / s).toFixed(0)} MB/s)`, (median(peer.restore) / s).toFixed(2)];
      });
      const label = pass === "alone" ? `${mb} MB alone` : `${mb} MB next to a ${siblingMb} MB sibling`;
      console.log(`\n${label}: artifact ${(artifactBytes / 1_048_576).toFixed(1)} MB; ${runs} run(s), medians; load average ${load0.toFixed(1)} → ${load1.toFixed(1)}`);
      console.log(table(["arm", "backup", "÷ natscli (throughput)", "restore", "÷ natscli (throughput)"], rows));
      console.log(`\nwhere cotal's online backup goes (${label}, median ms)`);
      console.log(table(["phase", ...armNames], phaseRows(armNames.map((a) => (cells.get(a) as Cell).backupPhases))));
      console.log(`\nwhere cotal's online restore goes (${label}, median ms)`);
      console.log(table(["phase", ...armNames], phaseRows(armNames.map((a) => (cells.get(a) as Cell).restorePhases))));
      const first = median((cells.get(armNames[0] ?? "default") as Cell).backup);
      if (pass === "alone") aloneBackup.set(mb, first);
      else console.log(`\ncotal backup (${armNames[0]}) next to the ${siblingMb} MB sibling ÷ alone at ${mb} MB: ${(first / (aloneBackup.get(mb) ?? Number.NaN)).toFixed(2)} (target ≤ 1.1, issue 29)`);
      results.push({ pass, mb, artifactBytes, load: [load0, load1], cells: Object.fromEntries(cells) });
    }
  }
  writeResult("backup-online", { sizes, siblingMb: aloneOnly ? 0 : siblingMb, runs, arms: armNames, results });
});
