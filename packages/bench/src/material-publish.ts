/**
 * The node material's publish and read (docs/cluster.md "The public bucket, and the agent renders
 * from it") at N tenants, against an in-memory bucket: what a cluster reload adds before its first
 * node rename, and what an agent's round reads. It counts the KV operations each makes (on a cluster,
 * each is a round trip to the R3 bucket) and times the CPU side (digests, held twins signed); no
 * broker is started. The arms: a first publish (every key), an unchanged one (the index read), one
 * tenant re-signed (its key and the index), and the agent's first and steady reads.
 *
 *   node packages/bench/dist/material-publish.js [--tenants 100,1000,5000] [--runs 5]
 */
import { performance } from "node:perf_hooks";
import { MaterialReader, heldAccountJwt, publishMaterial, type MaterialKv, type NodeBase } from "@cotal/core/broker";
import { createAccountTrust, createBrokerTrust } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { writeResult } from "./lib/out.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [100, 1000, 5000]);
const runs = args.int("runs", 5);

/** A bucket in a Map that counts what each call asks of it. */
function countingKv(): MaterialKv & { ops: { get: number; put: number; delete: number }; bytes: () => number; reset: () => void } {
  const map = new Map<string, Uint8Array>();
  const ops = { get: 0, put: 0, delete: 0 };
  return {
    ops,
    bytes: () => [...map.values()].reduce((n, v) => n + v.length, 0),
    reset: () => Object.assign(ops, { get: 0, put: 0, delete: 0 }),
    get: async (k) => (ops.get++, map.get(k)),
    put: async (k, v) => void (ops.put++, map.set(k, v)),
    delete: async (k) => void (ops.delete++, map.delete(k)),
  };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; out: T }> {
  const t0 = performance.now();
  const out = await fn();
  return { ms: performance.now() - t0, out };
}

await runBench(async () => {
  const broker = createBrokerTrust({ name: "material-publish", retainSystemSigningSeed: true });
  const operator = broker.operator;
  const base: NodeBase = {
    format: "cotal.node-material/1",
    operator: { publicKey: operator.publicKey, jwt: operator.jwt },
    system: { publicKey: broker.system.publicKey, jwt: broker.system.jwt },
    authority: { name: "authority", publicKey: broker.system.publicKey, jwt: broker.system.jwt },
    cluster: { name: "bench", nodes: [1, 2, 3].map((i) => ({ name: `bench-n${i}`, host: `10.99.0.${i}`, port: 4222, clusterPort: 6222 })) },
    maxPayload: 8 * 1024 * 1024,
    syncAlways: false,
  };
  const rows: (string | number)[][] = [];
  const results: Record<string, unknown>[] = [];
  for (const n of levels) {
    const spaces = Array.from({ length: n }, (_, i) => {
      const t = createAccountTrust(operator, `t${String(i).padStart(6, "0")}`, { kind: "space" });
      return { name: t.name, publicKey: t.publicKey, jwt: t.jwt };
    });
    const resigned = createAccountTrust(operator, spaces[0]?.name ?? "t0", { kind: "space" });
    const arms: Record<string, { ms: number[]; ops: string }> = {};
    const arm = (name: string, ms: number, kv: ReturnType<typeof countingKv>): void => {
      arms[name] ??= { ms: [], ops: "" };
      arms[name].ms.push(ms);
      arms[name].ops = `${kv.ops.get} get, ${kv.ops.put} put, ${kv.ops.delete} delete`;
    };
    let valueBytes = 0;
    for (let run = 0; run < runs; run++) {
      const kv = countingKv();
      const held = (jwt: string): string => heldAccountJwt(operator, jwt);
      const first = await timed(() => publishMaterial(kv, { base, spaces, held }));
      // heldAccountJwt memoizes within a process (each verb is a new one): only the first run signs, so only it is timed.
      if (run === 0) arm("first publish (one run: signs every held twin)", first.ms, kv);
      valueBytes = kv.bytes();
      kv.reset();
      arm("unchanged publish", (await timed(() => publishMaterial(kv, { base, spaces, held }))).ms, kv);
      kv.reset();
      const changed = spaces.map((s, i) => (i === 0 ? { ...s, jwt: resigned.jwt, publicKey: resigned.publicKey } : s));
      arm("one tenant re-signed", (await timed(() => publishMaterial(kv, { base, spaces: changed, held }))).ms, kv);
      const reader = new MaterialReader();
      kv.reset();
      arm("agent's first read", (await timed(() => reader.read(kv))).ms, kv);
      kv.reset();
      arm("agent's steady read", (await timed(() => reader.read(kv))).ms, kv);
    }
    for (const [name, a] of Object.entries(arms)) rows.push([n, name, `${round(median(a.ms))} ms`, a.ops]);
    rows.push([n, "bucket size", `${round(valueBytes / 1024, 1)} KiB`, ""]);
    results.push({ tenants: n, valueBytes, arms: Object.fromEntries(Object.entries(arms).map(([k, v]) => [k, { medianMs: round(median(v.ms)), ops: v.ops }])) });
  }
  console.log(`node material publish and read against an in-memory bucket (median of ${runs}; each KV op is one round trip to the R3 bucket on a cluster)`);
  console.log(table(["tenants", "arm", "cpu", "kv operations"], rows));
  console.log(`wrote ${writeResult("material-publish", { runs, results })}`);
});
