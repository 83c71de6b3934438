import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { natsServerBinary } from "@cotal/core/server-process";

/** The repository root: packages/bench/dist/lib/out.js → ../../../.. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
export const OUT_DIR = join(REPO_ROOT, "bench", "out");

export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  natsServer: string;
  loadavg1m: number;
  shared: string;
}

export function machine(): Machine {
  let natsServer = "unknown";
  try {
    natsServer = execFileSync(natsServerBinary(), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // reported as unknown
  }
  return {
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    natsServer,
    loadavg1m: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    shared: "shared machine: other engineers' test suites may run at the same time; figures are noisy",
  };
}

/** Writes bench/out/<name>.json at the repository root and returns its path. */
export function writeResult(name: string, result: Record<string, unknown>): string {
  mkdirSync(OUT_DIR, { recursive: true });
  const path = join(OUT_DIR, `${name}.json`);
  writeFileSync(path, `${JSON.stringify({ bench: name, at: new Date().toISOString(), argv: process.argv.slice(2), machine: machine(), ...result }, null, 2)}\n`);
  return path;
}
