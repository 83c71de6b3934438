/**
 * The snapshot and restore phases alone (issue 16, throughput vs natscli): one stream of `--mb` MB,
 * `$JS.API.STREAM.SNAPSHOT` / `RESTORE` as cotal sends them (stream-snapshot.ts) at several chunk
 * sizes, with and without the server's checksum pass (`jsck`), against `nats stream backup` /
 * `nats stream restore` on the same stream in the same run, arms alternating. No quiesce, no
 * manifest: what is left is the transfer itself.
 *
 *   node packages/bench/dist/backup-snapshot.js [--mb 64] [--runs 3]
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { mintSpaceCreds, spaceAdd } from "@cotal/core";
import { connectAsAccount } from "@cotal/core/broker";
import { restoreStream, snapshotStream, type SnapshotFile } from "@cotal/core/backup";
import { loadSpaceAccount } from "@cotal/core/root";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { startCotalRoot } from "./lib/cotal-root.js";
import { REPO_ROOT, writeResult } from "./lib/out.js";
import { median, table } from "./lib/stats.js";

const args = parseArgs();
const mb = args.int("mb", 64);
const runs = args.int("runs", 3);
const natsCli = process.env.NATS_CLI ?? execFileSync("bash", [join(REPO_ROOT, "infra", "nats-server.sh"), "cli-path"], { encoding: "utf8" }).trim();
const STREAM = "cotal_events_bench";

const seconds = async (fn: () => Promise<unknown> | unknown): Promise<number> => {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
};

await runBench(async () => {
  const r = await startCotalRoot("backup-snapshot");
  await spaceAdd({ root: r.root, names: ["bench"], quota: { disk: (2 * mb + 64) * 1024 * 1024 } });
  const account = loadSpaceAccount(r.layout, "bench");
  if (!account) throw new Error("no bench account");
  const nc = await connectAsAccount(r.started.url, account, { name: "bench-snapshot", ttlSeconds: 3600 });
  const js = jetstream(nc);
  const pool = Array.from({ length: 64 }, () => randomBytes(16 * 1024));
  const acks = [];
  for (let i = 0; i < (mb * 1024) / 16; i++) {
    acks.push(js.publish("cotal.bench.events.x", pool[i % 64] ?? new Uint8Array(0)));
    if (acks.length >= 256) await Promise.all(acks.splice(0));
  }
  await Promise.all(acks);
  const jsm = await jetstreamManager(nc);
  const creds = mintSpaceCreds({ root: r.root, space: "bench", user: "natscli", admin: true, out: join(r.root, "..", "natscli.creds") }).path;
  const nats = (...a: string[]) => execFileSync(natsCli, ["--server", r.started.url, "--creds", creds, ...a], { stdio: ["ignore", "ignore", "pipe"] });
  const scratch = join(r.root, "..", "snapshots");

  const variants: { label: string; backup: (dir: string) => Promise<unknown>; restore: (dir: string) => Promise<unknown> }[] = [];
  let last: SnapshotFile | undefined;
  for (const [chunk, check] of [[128, true], [128, false], [1024, false]] as const) {
    variants.push({
      label: `cotal, ${chunk} KiB chunks${check ? ", jsck" : ""}`,
      backup: async (dir) => (last = await snapshotStream(nc, STREAM, join(dir, "s.tar.s2"), () => undefined, { chunkSize: chunk * 1024, check })),
      restore: async (dir) => {
        if (!last) throw new Error("no snapshot");
        await restoreStream(nc, join(dir, "s.tar.s2"), { stream: STREAM, config: last.config, state: last.state }, () => undefined, { chunkSize: chunk * 1024, inFlight: 1 });
      },
    });
  }
  variants.push({ label: "nats stream backup/restore", backup: async (dir) => nats("stream", "backup", "--no-progress", STREAM, dir), restore: async (dir) => nats("stream", "restore", "--no-progress", dir) });

  const times = new Map(variants.map((v) => [v.label, { backup: [] as number[], restore: [] as number[] }]));
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const dir = join(scratch, `${i}-${variants.indexOf(v)}`);
      mkdirSync(dir, { recursive: true });
      const t = times.get(v.label);
      t?.backup.push(await seconds(() => v.backup(v.label.startsWith("nats") ? join(dir, "nats") : dir)));
      await jsm.streams.delete(STREAM);
      t?.restore.push(await seconds(() => v.restore(v.label.startsWith("nats") ? join(dir, "nats") : dir)));
      rmSync(dir, { recursive: true, force: true });
    }
  }
  await nc.close();
  const natsT = times.get("nats stream backup/restore");
  const rows = variants.map((v) => {
    const t = times.get(v.label);
    const b = median(t?.backup ?? []);
    const s = median(t?.restore ?? []);
    return [v.label, `${b.toFixed(2)} s (${(mb / b).toFixed(0)} MB/s)`, (median(natsT?.backup ?? []) / b).toFixed(2), `${s.toFixed(2)} s (${(mb / s).toFixed(0)} MB/s)`, (median(natsT?.restore ?? []) / s).toFixed(2)];
  });
  console.log(`one stream of ${mb} MB (16 KiB random events); ${runs} run(s) per variant, alternating, medians`);
  console.log(table(["variant", "snapshot", "÷ natscli", "restore", "÷ natscli"], rows));
  writeResult("backup-snapshot", { mb, runs, times: Object.fromEntries(times) });
});
