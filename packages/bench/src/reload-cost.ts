/**
 * nats-server reload time (SIGHUP → "Reloaded server configuration") against the number of preloaded
 * tenants, on a config rendered by cotal's serverConfig from freshly minted accounts, the broker
 * started through the harness (process backend).
 *
 *   node packages/bench/dist/reload-cost.js [--tenants 10,100,1000,2000,5000] [--runs 5]
 */
import { performance } from "node:perf_hooks";
import { ProcessBackend, freePort, sleep, type ProcessBroker } from "@cotal/harness";
import { serverConfig } from "@cotal/core/broker";
import { toAccountRecord } from "@cotal/core/root";
import { createAccountTrust, createBrokerTrust } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench } from "./lib/cleanup.js";
import { writeResult } from "./lib/out.js";
import { ms, summarize, table, type Summary } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [10, 100, 1000, 2000, 5000]);
const runs = args.int("runs", 5);
const VERDICT = /Reloaded server configuration|Failed to reload server configuration/;

/** SIGHUP, then poll the log tail every 2 ms for the verdict written after the signal. */
async function timedReload(b: ProcessBroker): Promise<number> {
  const offset = await b.logOffset();
  const t0 = performance.now();
  await b.signal("SIGHUP");
  for (;;) {
    const text = await b.logsSince(offset);
    const m = VERDICT.exec(text);
    if (m) {
      if (!m[0].startsWith("Reloaded")) throw new Error(`reload failed: ${text.slice(-500)}`);
      return performance.now() - t0;
    }
    if (performance.now() - t0 > 60_000) throw new Error("no reload verdict within 60 s");
    await sleep(2);
  }
}

await runBench(async () => {
  const backend = new ProcessBackend();
  const broker = createBrokerTrust({ name: "reload-cost", retainSystemSigningSeed: true });
  const authority = toAccountRecord(createAccountTrust(broker.operator, "authority", { kind: "authority" }));
  const rows: { tenants: number; configBytes: number; startMs: number; reload: Summary; samples: number[] }[] = [];
  for (const n of levels) {
    const spaces = Array.from({ length: n }, (_, i) => toAccountRecord(createAccountTrust(broker.operator, `t${String(i).padStart(5, "0")}`, { kind: "space" })));
    const port = await freePort();
    const config = serverConfig(broker, spaces, { host: "127.0.0.1", port, serverName: `reload-cost-${n}`, storeDir: "{{STORE_DIR}}", authority });
    const t0 = performance.now();
    const b = await backend.start({ config, port, name: `reload-${n}` });
    const startMs = performance.now() - t0;
    onCleanup(`dispose the ${n}-tenant broker`, () => b.dispose());
    try {
      await timedReload(b); // warm-up
      const samples: number[] = [];
      for (let r = 0; r < runs; r++) samples.push(await timedReload(b));
      const reload = summarize(samples);
      rows.push({ tenants: n, configBytes: Buffer.byteLength(config), startMs: Math.round(startMs), reload, samples });
      console.log(`${n} tenants: reload median ${ms(reload.median)} (min ${ms(reload.min)}, max ${ms(reload.max)}), start ${ms(startMs)}, config ${(Buffer.byteLength(config) / 1024).toFixed(0)} KiB`);
    } finally {
      await b.dispose();
    }
  }
  console.log(`\nreload (SIGHUP → proof line), ${runs} runs each, process backend`);
  console.log(
    table(
      ["tenants", "config", "start", "median", "p90", "min", "max", "per tenant"],
      rows.map((r) => [r.tenants, `${(r.configBytes / 1024).toFixed(0)} KiB`, ms(r.startMs), ms(r.reload.median), ms(r.reload.p90), ms(r.reload.min), ms(r.reload.max), `${((r.reload.median / r.tenants) * 1000).toFixed(0)} µs`]),
    ),
  );
  console.log(`wrote ${writeResult("reload-cost", { levels, runs, backend: "process", rows })}`);
});
