/**
 * The inventory record's claim at N tenants (64-character names), stored as the previous version did
 * (the delta plus the whole next list) and as it is now (the delta alone, the next list derived by
 * `claimedSpaces`), against nats-server's default 1 MiB max_payload; and the saga's decide step for
 * one add (the delta and the derived list) against the previous rule (`includes` in a loop). Pure:
 * no broker is started.
 *
 *   node packages/bench/dist/claim-size.js [--tenants 1000,7800,10000,20000] [--batch 1000] [--runs 5]
 */
import { performance } from "node:perf_hooks";
import { claimedSpaces, intentDelta, type InventoryRecord } from "@cotal/core/inventory";
import type { PendingMutation } from "@cotal/core";
import { parseArgs } from "./lib/args.js";
import { runBench } from "./lib/cleanup.js";
import { writeResult } from "./lib/out.js";
import { median, round, table } from "./lib/stats.js";

const args = parseArgs();
const levels = args.list("tenants", [1000, 7800, 10000, 20000]);
const batch = args.int("batch", 1000);
const runs = args.int("runs", 5);
/** nats-server's default max_payload, which a root created before the rendered `max_payload` runs with. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** inventory/record-size.ts: the put's header room and a claim's room for its staged and proven digests. */
const PUT_OVERHEAD = 256;
const CLAIM_GROWTH = 512;

const name = (p: string, i: number): string => `${p}-${String(i).padStart(6, "0")}-${"x".repeat(55)}`; // 64 chars
const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** The previous version's decide step, as it was: the full next list, then `includes` over it twice. */
function oldDecide(current: readonly string[], adds: readonly string[]): { added: string[]; removed: string[]; target: string[] } {
  const set = new Set(current);
  for (const a of adds) set.add(a);
  const target = [...set].sort();
  return { added: target.filter((s) => !current.includes(s)), removed: current.filter((s) => !target.includes(s)), target };
}

function timed(fn: () => unknown): number {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

await runBench(async () => {
  const rows: { tenants: number; claimBefore: number; claimNow: number; commit: number; fitsBefore: string; fitsNow: string; decideOldMs: number; decideNowMs: number }[] = [];
  for (const n of levels) {
    const committed = Array.from({ length: n - batch }, (_, i) => name("t", i));
    const adds = Array.from({ length: batch }, (_, i) => name("u", i));
    const claim: PendingMutation = { generation: 8, op: "batch", adds, removes: [], mints: adds, writer: "pid 12345@host (space add)", leaseId: "0".repeat(32), claimedAt: new Date(0).toISOString() };
    const base: InventoryRecord = { generation: 7, spaces: committed, appliedGeneration: 7, configDigest: `sha256:${"a".repeat(64)}`, pending: null };
    const now = { ...base, pending: claim };
    const before = { ...base, pending: { ...claim, nextSpaces: claimedSpaces(committed, claim) } };
    const commit = { ...base, generation: 8, appliedGeneration: 8, spaces: claimedSpaces(committed, claim) };
    const need = (r: unknown, growth: number) => bytes(r) + PUT_OVERHEAD + growth;
    const one = Array.from({ length: n }, (_, i) => name("t", i));
    rows.push({
      tenants: n,
      claimBefore: need(before, CLAIM_GROWTH),
      claimNow: need(now, CLAIM_GROWTH),
      commit: need(commit, 0),
      fitsBefore: need(before, CLAIM_GROWTH) <= DEFAULT_MAX_PAYLOAD ? "yes" : "NO",
      fitsNow: need(now, CLAIM_GROWTH) <= DEFAULT_MAX_PAYLOAD ? "yes" : "NO",
      decideOldMs: round(timed(() => oldDecide(one, ["zz-new"]))),
      decideNowMs: round(timed(() => {
        const d = intentDelta(one, { adds: ["zz-new"], removes: [] });
        return claimedSpaces(one, { adds: d.added, removes: d.removed });
      })),
    });
  }
  const kib = (b: number) => `${round(b / 1024, 1)} KiB`;
  console.log(`claim of a ${batch}-name batch reaching N tenants (64-char names), bytes one KV put needs (value + ${PUT_OVERHEAD} B header + ${CLAIM_GROWTH} B claim room); max_payload default ${DEFAULT_MAX_PAYLOAD} B`);
  console.log(
    table(
      ["tenants", "claim before", "claim now", "commit", "before fits 1 MiB", "now fits 1 MiB", `decide 1 add, before (median of ${runs})`, "decide 1 add, now"],
      rows.map((r) => [r.tenants, kib(r.claimBefore), kib(r.claimNow), kib(r.commit), r.fitsBefore, r.fitsNow, `${r.decideOldMs} ms`, `${r.decideNowMs} ms`]),
    ),
  );
  console.log(`wrote ${writeResult("claim-size", { batch, runs, rows })}`);
});
