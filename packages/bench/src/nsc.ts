/**
 * cotal against the `nsc` workflow (issue 35), on the same nats-server settings (a full-resolver server for
 * nsc, with the JetStream budget and sync cotal's broker has):
 *   onboarding: N tenants. cotal: one `spaceAdd` of every name (trusted, then provisioned); nsc: per tenant
 *     `nsc add account` and `nsc edit account` with cotal's default limits, then one `nsc push -A` to the
 *     server (when that fails, as it does past ~120 accounts: its temporary system user expires after 2 minutes
 *     and the push waits 1 s per account, the failure is kept and the push retried with `--system-user sys`,
 *     the operator's stored user; at 1,000 the nsc arm takes ~20 minutes)
 *   removal: one tenant, from the command's start until a new connection with its creds is refused.
 *     cotal: `spaceRm`; nsc: `nsc push --account-removal`, then `nsc delete account`.
 * Streams: cotal provisions each space's; nsc makes none (not part of its workflow), so the table shows
 * cotal's trust phase (until its saga released) beside nsc's add + push, and cotal's whole add.
 * --runs R repeats both arms back to back, the order rotated; ratios pair the arms of one run.
 *
 *   node packages/bench/dist/nsc.js [--n 1000] [--runs 1]      # NSC_BIN=… or infra/nsc.sh's build; NATS_SERVER_BIN=… for another server
 */
import { performance } from "node:perf_hooks";
import { spaceAdd, spaceRm } from "@cotal/core";
import { parseArgs } from "./lib/args.js";
import { runBench, runCleanup } from "./lib/cleanup.js";
import { names, spaceCreds, startCotalRoot } from "./lib/cotal-root.js";
import { nscBinary, nscLimitFlags, startNscBroker } from "./lib/nsc.js";
import { writeResult } from "./lib/out.js";
import { cotalSyncsAlways, DEFAULT_LIMITS, jetStreamSyncNote } from "./lib/peer-broker.js";
import { median, round, table } from "./lib/stats.js";
import { connectsOnce, untilRefused } from "./lib/tenant-check.js";

const args = parseArgs();
const N = args.int("n", 1000);
const runs = args.int("runs", 1);
const SYNC_ALWAYS = cotalSyncsAlways();

interface Result {
  arm: "cotal" | "nsc";
  /** Until every tenant is trusted: cotal's saga released; nsc's accounts added and pushed. */
  trustMs: number;
  /** cotal: the whole spaceAdd (trusted and provisioned); nsc: the same as trustMs (it provisions nothing). */
  onboardMs: number;
  /** The removal command's own time, and until the removed tenant's new connection is refused. */
  removeCmdMs: number;
  removedMs: number;
  notes: string[];
}

/** The first, middle and last tenant's creds connect: onboarding is usable, not just accepted. */
async function checkSamples(url: string, credsOf: (name: string) => Promise<string> | string, list: readonly string[]): Promise<void> {
  for (const i of new Set([0, Math.floor(list.length / 2), list.length - 1])) await connectsOnce(url, await credsOf(list[i] as string));
}

async function cotalArm(): Promise<Result> {
  const br = await startCotalRoot("nsc-cotal");
  const list = names("c", 0, N);
  let releaseAt = 0;
  const t0 = performance.now();
  const res = await spaceAdd({ root: br.root, names: list, onTiming: (step) => (step === "release" ? (releaseAt = performance.now()) : undefined) });
  const t1 = performance.now();
  if (res.added.length !== N) throw new Error(`cotal added ${res.added.length} of ${N}`);
  await checkSamples(br.started.url, (n) => spaceCreds(br.layout, n), list);
  const victim = list[Math.floor(N / 2)] as string;
  const creds = spaceCreds(br.layout, victim);
  await connectsOnce(br.started.url, creds);
  const r0 = performance.now();
  await spaceRm({ root: br.root, name: victim });
  const removeCmdMs = performance.now() - r0;
  const removedMs = await untilRefused(br.started.url, creds, r0);
  return { arm: "cotal", trustMs: releaseAt - t0, onboardMs: t1 - t0, removeCmdMs, removedMs, notes: [`fsyncs: ${jetStreamSyncNote(SYNC_ALWAYS)}; each record and the config fsynced`] };
}

/** `nsc push -A`; when it fails, the failure is noted and the push retried with the operator's stored system user. */
async function pushAll(nsc: (...a: string[]) => Promise<string>, url: string, notes: string[]): Promise<void> {
  const p0 = performance.now();
  try {
    await nsc("push", "--all", "--account-jwt-server-url", url);
    notes.push(`nsc push -A: ${round(performance.now() - p0)} ms`);
  } catch (e) {
    const lines = (e as Error).message.split("\n").map((l) => l.trim()).filter(Boolean);
    const why = lines.filter((l) => !l.includes("[ OK ]") && !l.startsWith("nsc ") && /err|expir|timeout|authori/i.test(l)).slice(0, 2).join(" / ");
    notes.push(`nsc push -A failed after ${round(performance.now() - p0)} ms (counted): ${why || lines.slice(-1).join("")}`);
    const p1 = performance.now();
    await nsc("push", "--all", "--account-jwt-server-url", url, "--system-user", "sys");
    notes.push(`nsc push -A --system-user sys: ${round(performance.now() - p1)} ms`);
  }
}

async function nscArm(bin: string): Promise<Result> {
  const { broker, nsc, creds: credsOf } = await startNscBroker(bin, "nsc-bench", { syncAlways: SYNC_ALWAYS });
  const list = names("n", 0, N);
  const limits = nscLimitFlags(DEFAULT_LIMITS);
  const notes: string[] = [];
  const t0 = performance.now();
  for (const name of list) {
    await nsc("add", "account", "--name", name);
    await nsc("edit", "account", "--name", name, ...limits);
  }
  notes.push(`nsc add + edit account × ${N}: ${round(performance.now() - t0)} ms`);
  await pushAll(nsc, broker.url, notes);
  const t1 = performance.now();
  await checkSamples(broker.url, (n) => credsOf(n, "sample"), list);
  const victim = list[Math.floor(N / 2)] as string;
  const creds = await credsOf(victim, "victim");
  await connectsOnce(broker.url, creds);
  const r0 = performance.now();
  await nsc("push", "--account-removal", victim, "--account-jwt-server-url", broker.url);
  await nsc("delete", "account", "--name", victim);
  const removeCmdMs = performance.now() - r0;
  const removedMs = await untilRefused(broker.url, creds, r0);
  notes.push("nsc push waits out its --timeout (1 s, the least it takes) for every account it pushes or removes: it collects the replies of every server (cmd/push.go, multiRequest); a removed account's next connection waits the resolver's 1.9 s lookup timeout before it is refused");
  notes.push(`fsyncs: ${jetStreamSyncNote(SYNC_ALWAYS)}; the resolver's JWT files written without fsync; nsc's own store files as Go writes them (no fsync)`);
  return { arm: "nsc", trustMs: t1 - t0, onboardMs: t1 - t0, removeCmdMs, removedMs, notes };
}

const sec = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

await runBench(async () => {
  const bin = nscBinary();
  if (!bin) throw new Error("no nsc: run `bash infra/nsc.sh install` (or set NSC_BIN)");
  console.log(`${N} tenants, ${runs} run(s); ${jetStreamSyncNote(SYNC_ALWAYS)} on both servers; nsc: ${bin}`);
  const results: Result[] = [];
  const pairs: { run: number; order: string; cotal: Result; nsc: Result }[] = [];
  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? (["cotal", "nsc"] as const) : (["nsc", "cotal"] as const);
    const got: Partial<Record<"cotal" | "nsc", Result>> = {};
    for (const arm of order) {
      console.log(`… ${arm} (run ${r + 1}/${runs})`);
      const res = arm === "cotal" ? await cotalArm() : await nscArm(bin);
      await runCleanup(); // each arm's server stops before the next starts
      console.log(`  ${arm}: trusted ${sec(res.trustMs)}, onboarded ${sec(res.onboardMs)}, removal refused after ${round(res.removedMs)} ms`);
      results.push(res);
      got[arm] = res;
    }
    pairs.push({ run: r + 1, order: `${order[0]} first`, cotal: got.cotal as Result, nsc: got.nsc as Result });
  }
  console.log(`\n${N} tenants onboarded, then one removed`);
  console.log(table(["arm", "trusted", "onboarded", "removal command", "until refused"], results.map((x) => [x.arm, sec(x.trustMs), sec(x.onboardMs), `${round(x.removeCmdMs)} ms`, `${round(x.removedMs)} ms`])));
  for (const x of results) for (const n of x.notes) console.log(`  ${x.arm}: ${n}`);
  const ratios = pairs.map((p) => ({
    run: p.run,
    order: p.order,
    trust: round(p.nsc.trustMs / p.cotal.trustMs, 2),
    onboard: round(p.nsc.onboardMs / p.cotal.onboardMs, 2),
    removal: round(p.nsc.removedMs / p.cotal.removedMs, 2),
  }));
  console.log("\nnsc ÷ cotal, each pair back to back (> 1: cotal faster)");
  console.log(table(["run", "order", "trusted", "onboarded (cotal with streams)", "until refused"], ratios.map((r) => [r.run, r.order, `${r.trust}×`, `${r.onboard}×`, `${r.removal}×`])));
  const med = { trust: median(ratios.map((r) => r.trust)), onboard: median(ratios.map((r) => r.onboard)), removal: median(ratios.map((r) => r.removal)) };
  console.log(`medians: ${JSON.stringify(med)}`);
  console.log(`wrote ${writeResult("nsc", { n: N, runs, syncAlways: SYNC_ALWAYS, nsc: bin, results, ratios, medians: med })}`);
});
