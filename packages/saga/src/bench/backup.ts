/**
 * Backup/restore throughput against a plain `cp -r` of the same store (SPEC §9). Run after build:
 * `node packages/saga/dist/bench/backup.js [MB]`. Builds a throwaway root in the OS temp dir.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connectAsAccount } from "../broker/connect.js";
import { freePort } from "../broker/free-port.js";
import { deleteSpaceStreams } from "../provision/teardown-space.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { down } from "../ops/down.js";
import { up } from "../ops/up.js";
import { spaceBackup } from "../maintenance/backup.js";
import { spaceRestore } from "../maintenance/restore.js";

const mb = Number.parseInt(process.argv[2] ?? "64", 10);
if (!Number.isSafeInteger(mb) || mb <= 0) throw new Error("size in MB must be a positive integer");
const tmp = mkdtempSync(join(tmpdir(), "cotal-bench-backup-"));
const root = join(tmp, ".cotal");
const layout = new RootLayout(root);
const secs = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;
const rate = (bytes: number, s: number) => `${(bytes / 1_048_576 / s).toFixed(1).padStart(8)} MB/s  (${(bytes / 1_048_576).toFixed(1)} MB in ${s.toFixed(2)} s)`;

const port = await freePort();

try {
  const started = await up({ root, space: "bench", detach: true, port });
  const account = loadSpaceAccount(layout, "bench");
  if (!account) throw new Error("no bench account");
  const nc = await connectAsAccount(started.url, account, { name: "bench-writer" });
  const js = jetstream(nc);
  // Random bodies: the snapshot is s2-compressed, so constant bytes would measure the compressor, not the copy.
  const pool = Array.from({ length: 64 }, () => randomBytes(16 * 1024));
  const count = (mb * 1024) / 16;
  const acks = [];
  for (let i = 0; i < count; i++) {
    acks.push(js.publish("cotal.bench.events.x", pool[i % 64] ?? new Uint8Array(0)));
    if (acks.length >= 256) await Promise.all(acks.splice(0));
  }
  await Promise.all(acks);
  await nc.close();
  await down({ root, preserveState: true });

  let t0 = process.hrtime.bigint();
  execFileSync("cp", ["-r", layout.storeDir, join(tmp, "plain-copy")]);
  const cpS = secs(t0);
  const storeBytes = Number(execFileSync("du", ["-sb", layout.storeDir]).toString().split("\t")[0]);

  t0 = process.hrtime.bigint();
  const b = await spaceBackup({ root, space: "bench", out: join(tmp, "artifact") });
  const backupS = secs(t0);

  // Empty the namespace (the artifact then restores into it) with the broker briefly back up.
  const resumed = await up({ root, detach: true });
  await deleteSpaceStreams(resumed.url, account);
  await down({ root, preserveState: true });
  t0 = process.hrtime.bigint();
  await spaceRestore({ root, space: "bench", from: join(tmp, "artifact") });
  const restoreS = secs(t0);

  console.log(`store ${(storeBytes / 1_048_576).toFixed(1)} MB, ${count} messages of 16 KiB (random); artifact ${(b.bytes / 1_048_576).toFixed(1)} MB`);
  console.log(`cp -r of the store      ${rate(storeBytes, cpS)}`);
  console.log(`space backup (clone + isolated broker + snapshot + manifest)  ${rate(storeBytes, backupS)}`);
  console.log(`space restore (verify + quarantine + target + assert)         ${rate(storeBytes, restoreS)}`);
} finally {
  await down({ root }).catch(() => undefined);
  rmSync(tmp, { recursive: true, force: true });
}
