import { realpathSync } from "node:fs";
import type { Command } from "commander";
import { usageError } from "@cotal/core/errors";
import { guardsOf, rootOf } from "../context.js";
import { out } from "../output.js";
import { portFlag, serveUntilSignal } from "../serve.js";

function msOf(flag: string, example: number): (v: string) => number {
  return (v) => {
    if (!/^\d+$/.test(v)) throw usageError(`${flag} takes a whole number of milliseconds, got ${JSON.stringify(v)}`, `cotal metrics ${flag} ${example}`);
    return Number(v);
  };
}

interface MetricsFlags {
  port: number;
  host: string;
  allowRemote?: boolean;
  redis: boolean;
  maxAgeMs: number;
  usageMaxAgeMs: number;
}

/** `cotal metrics`: the root's Prometheus series with no worker running (docs/metrics.md). */
export function registerMetrics(program: Command): void {
  program
    .command("metrics")
    .description(
      "serve this root's Prometheus series (tenants by state, usage against quota, queue depth, last backups) on /metrics until Ctrl-C; read-only: GET and HEAD of /metrics and /healthz, every other method 405",
    )
    .option("--port <port>", "port to listen on (0 = any free port)", portFlag("metrics", 9465), 9465)
    .option("--host <host>", "address to listen on; a non-loopback one needs --allow-remote", "127.0.0.1")
    .option("--allow-remote", "bind a non-loopback --host (no login: whoever reaches it reads every tenant's name and usage)")
    .option("--no-redis", "no queue-depth or backup series (otherwise read from $REDIS_URL, or the local Redis)")
    .option("--max-age-ms <ms>", "serve a snapshot this young without reading again; reads never overlap", msOf("--max-age-ms", 10_000), 10_000)
    .option("--usage-max-age-ms <ms>", "read each space's usage (one connection per account) at most this often", msOf("--usage-max-age-ms", 60_000), 60_000)
    .action(async (flags: MetricsFlags, cmd: Command) => {
      const { redisUrlFrom, startMetricsServer } = await import("@cotal/jobs"); // lazy: only the verbs that need BullMQ load it
      const root = realpathSync(rootOf(cmd));
      const m = await startMetricsServer({
        root,
        host: flags.host,
        port: flags.port,
        guards: guardsOf(cmd),
        maxAgeMs: flags.maxAgeMs,
        usageMaxAgeMs: flags.usageMaxAgeMs,
        allowRemote: flags.allowRemote === true,
        ...(flags.redis ? { redisUrl: redisUrlFrom(process.env) } : {}),
      });
      out(`cotal metrics: serving ${m.url}/metrics (and /healthz) for ${root}; Ctrl-C stops`);
      await serveUntilSignal("metrics", m);
    });
}
