/**
 * One add and one removal on a large root, as whole processes (issue 35: "one add at 1,000 tenants
 * until usable ≤ 1.0 s; one removal until refused ≤ 1.0 s"):
 *   add:     `cotal space add <name>` from its spawn, then the tenant's client (a cred minted from the new
 *            record) connects, opens its KV bucket and puts a key: "until usable".
 *   removal: `cotal space rm <name> --yes` from its spawn until a new connection with that tenant's cred
 *            is refused (polled every --poll ms from the spawn on, while the process runs).
 * Arms, the order rotated each round: `cotal` (the headline), `cotal --log-format json` (the same verb,
 * its phase lines give where the time goes: process start, preamble, each saga step, provisioning,
 * the process's exit) and the scripted full-resolver peer (lib/peer-one.ts in its own process: mint,
 * $SYS.REQ.CLAIMS.UPDATE, the same provisionSpace; removal: the streams, then $SYS.REQ.CLAIMS.DELETE),
 * on a server with as many accounts, the same JetStream budget and sync. Each process runs under
 * /usr/bin/time (its own CPU); the broker's CPU over each command comes from /proc/<pid>/stat. Last, the
 * server's own reload at this size: reloads of the unchanged config (RELOAD request or SIGHUP, proven
 * as the saga proves them), wall and the broker's CPU, to set cotal's part apart from the server's.
 *
 *   node packages/bench/dist/one-add.js [--tenants 1000] [--runs 5] [--poll 10] [--skip peer,logged,reload]
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Kvm } from "@nats-io/kv";
import { cotalCliPath, tempRoot } from "@cotal/harness";
import { connectWithCreds, readRuntime, reloadAndProve } from "@cotal/core/broker";
import { PROVISION_CONCURRENCY, provisionSpace } from "@cotal/core/provision";
import { RootLayout, mapPool, spaceAdd } from "@cotal/core";
import type { AccountRecord } from "@cotal/core/root";
import { mintUserCreds } from "@cotal/core/trust";
import { parseArgs } from "./lib/args.js";
import { onCleanup, runBench } from "./lib/cleanup.js";
import { names, spaceCreds, startCotalRoot } from "./lib/cotal-root.js";
import { writeResult } from "./lib/out.js";
import { cotalSyncsAlways, jetStreamSyncNote, startPeerBroker } from "./lib/peer-broker.js";
import { median, round, summarize, table } from "./lib/stats.js";
import { connectsOnce } from "./lib/tenant-check.js";

const args = parseArgs();
const tenants = args.int("tenants", 1000);
const runs = args.int("runs", 5);
const pollMs = args.int("poll", 10);
const skip = new Set(args.str("skip", "").split(",").filter(Boolean));
const CLI = cotalCliPath();
const PEER_ONE = fileURLToPath(new URL("./lib/peer-one.js", import.meta.url));
const SYNC_ALWAYS = cotalSyncsAlways();

/** Epoch ms with sub-ms precision (pino's `time` and the peer's marks are epoch ms). */
const epoch = (): number => performance.timeOrigin + performance.now();

/** The broker's user + system CPU so far, ms (clock ticks of 10 ms). */
function procCpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Ran {
  startAt: number;
  exitAt: number;
  code: number | null;
  stdout: string;
  stderr: string;
  /** The process's own user + system CPU (/usr/bin/time), ms. */
  cpuMs: number;
  brokerCpuMs: number;
}

let timeSeq = 0;
/** Spawns `node <argv>` under /usr/bin/time; resolves at its exit with its output, CPU and the broker's CPU meanwhile. */
async function run(argv: string[], brokerPid: number | undefined, tmp: string): Promise<Ran> {
  const timeFile = join(tmp, `time.${timeSeq++}`);
  const b0 = procCpuMs(brokerPid);
  const startAt = epoch();
  const child = spawn("/usr/bin/time", ["-f", "%U %S", "-o", timeFile, process.execPath, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  const exitAt = epoch();
  const [user = Number.NaN, sys = Number.NaN] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1)?.split(" ").map(Number) ?? [];
  return { startAt, exitAt, code, stdout, stderr, cpuMs: (user + sys) * 1000, brokerCpuMs: procCpuMs(brokerPid) - b0 };
}

/** The tenant's client: connects with `creds`, opens its state bucket and puts a key (ms). */
async function use(url: string, creds: string, space: string): Promise<number> {
  const t0 = performance.now();
  const nc = await connectWithCreds(url, creds, { name: "bench-tenant", reconnect: false });
  try {
    const kv = await new Kvm(nc).open(`cotal_state_${space}`);
    await kv.put("hello", "world");
  } finally {
    await nc.close();
  }
  return performance.now() - t0;
}

const REFUSED = /authori[sz]ation|authentication|account/i;

/** Polls new connections with `creds` every pollMs until one is refused: its epoch ms, or NaN when `stop()` says to give up. */
async function pollRefused(url: string, creds: string, stop: () => boolean): Promise<number> {
  for (;;) {
    try {
      await connectsOnce(url, creds);
    } catch (e) {
      // only the server's refusal counts; a connection a reload dropped (2.9.10 drops every JWT client) is polled again
      if (REFUSED.test((e as Error).message)) return epoch();
    }
    if (stop()) return Number.NaN;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** One arm's add and removal: the whole process, where it went, and CPU. */
interface Sample {
  arm: string;
  addProcessMs: number;
  useMs: number;
  usableMs: number;
  addCpuMs: number;
  addBrokerCpuMs: number;
  refusedMs: number;
  rmProcessMs: number;
  rmCpuMs: number;
  rmBrokerCpuMs: number;
  addPhases: Record<string, number>;
  rmPhases: Record<string, number>;
}

type Line = { event?: string; phase?: string; ms?: number; time?: number; what?: string; done?: number; total?: number };

/** Phase lines (pino JSON) → ms per phase, with "process start" (spawn to the first phase), untimed gaps and the tail to exit. */
function phasesOf(r: Ran): Record<string, number> {
  const lines = `${r.stdout}\n${r.stderr}`
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Line)
    .filter((l) => typeof l.time === "number");
  const out: Record<string, number> = {};
  let at = r.startAt;
  let untimed = 0;
  for (const l of lines) {
    const time = l.time as number;
    if (l.event === "phase" && l.phase) {
      const begun = time - (l.ms ?? 0);
      if (Object.keys(out).length === 0) out["process start → first phase"] = begun - r.startAt;
      else untimed += Math.max(0, begun - at);
      out[l.phase] = (out[l.phase] ?? 0) + (l.ms ?? 0);
      at = time;
    } else if (l.event === "progress" && l.done === l.total) {
      out["provisioning (release → provisioned)"] = time - at;
      at = time;
    }
  }
  out["untimed between phases"] = untimed;
  out["last line → exit"] = r.exitAt - at;
  return out;
}

/** The peer's `mark <what> <epoch>` lines → ms per step, the first from the spawn. */
function marksOf(r: Ran): Record<string, number> {
  const out: Record<string, number> = {};
  let at = r.startAt;
  for (const l of r.stdout.split("\n")) {
    const [tag, what, t] = l.split(" ");
    if (tag !== "mark" || !what) continue;
    out[at === r.startAt ? `process start → ${what}` : what] = Number(t) - at;
    at = Number(t);
  }
  out["last mark → exit"] = r.exitAt - at;
  return out;
}

function assertOk(r: Ran, what: string): void {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.stderr.slice(-800)}`);
}

interface Target {
  url: string;
  brokerPid: number | undefined;
  tmp: string;
}

/** A removal whose refusal is polled from the spawn on, alongside the process. */
async function timedRemoval(t: Target, argv: string[], creds: string): Promise<{ ran: Ran; refusedAt: number }> {
  let exited = false;
  const poll = pollRefused(t.url, creds, () => exited);
  const ran = await run(argv, t.brokerPid, t.tmp).finally(() => (exited = true));
  let refusedAt = await poll;
  if (Number.isNaN(refusedAt)) refusedAt = await pollRefused(t.url, creds, () => epoch() - ran.exitAt > 30_000);
  return { ran, refusedAt };
}

/** cotal's add until usable, then its removal until refused; `logged` adds `--log-format json` for the phases. */
async function cotalRound(t: Target, root: string, space: string, logged: boolean): Promise<Sample> {
  const flags = ["--root", root, ...(logged ? ["--log-format", "json"] : [])];
  const add = await run([CLI, ...flags, "space", "add", space], t.brokerPid, t.tmp);
  assertOk(add, `cotal space add ${space}`);
  const creds = spaceCreds(new RootLayout(root), space, "app"); // what `cotal space creds` mints, in memory
  const useMs = await use(t.url, creds, space);
  const rm = await timedRemoval(t, [CLI, ...flags, "space", "rm", space, "--yes"], creds);
  assertOk(rm.ran, `cotal space rm ${space}`);
  return sample(logged ? "cotal --log-format json" : "cotal", add, useMs, rm, logged ? phasesOf : () => ({}));
}

/** The scripted peer's add until usable, then its removal until refused. */
async function peerRound(t: Target, configFile: string, space: string): Promise<Sample> {
  const recFile = join(t.tmp, `${space}.json`);
  const add = await run([PEER_ONE, configFile, "add", space, recFile], t.brokerPid, t.tmp);
  assertOk(add, `peer add ${space}`);
  const rec = JSON.parse(readFileSync(recFile, "utf8")) as AccountRecord;
  const creds = mintUserCreds(rec, { name: "app", expiresInSeconds: 3600 }).creds;
  const useMs = await use(t.url, creds, space);
  const rm = await timedRemoval(t, [PEER_ONE, configFile, "rm", recFile], creds);
  assertOk(rm.ran, `peer rm ${space}`);
  return sample("peer: $SYS.REQ.CLAIMS.UPDATE / DELETE", add, useMs, rm, marksOf);
}

function sample(arm: string, add: Ran, useMs: number, rm: { ran: Ran; refusedAt: number }, phases: (r: Ran) => Record<string, number>): Sample {
  const addProcessMs = add.exitAt - add.startAt;
  return {
    arm,
    addProcessMs,
    useMs,
    usableMs: addProcessMs + useMs,
    addCpuMs: add.cpuMs,
    addBrokerCpuMs: add.brokerCpuMs,
    refusedMs: rm.refusedAt - rm.ran.startAt,
    rmProcessMs: rm.ran.exitAt - rm.ran.startAt,
    rmCpuMs: rm.ran.cpuMs,
    rmBrokerCpuMs: rm.ran.brokerCpuMs,
    addPhases: phases(add),
    rmPhases: phases(rm.ran),
  };
}

/** The server's own reload at this size: the unchanged config reloaded and proven, wall and broker CPU. */
async function serverReloads(root: string, brokerPid: number | undefined, n: number): Promise<{ wallMs: number[]; brokerCpuMs: number[] }> {
  const layout = new RootLayout(root);
  const runtime = readRuntime(layout);
  if (!runtime) throw new Error("no broker runtime");
  const wallMs: number[] = [];
  const brokerCpuMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const c0 = procCpuMs(brokerPid);
    const t0 = performance.now();
    const v = await reloadAndProve(runtime, { layout });
    wallMs.push(performance.now() - t0);
    brokerCpuMs.push(procCpuMs(brokerPid) - c0);
    if (v.outcome !== "reloaded") throw new Error(`reload ${v.outcome}`);
  }
  return { wallMs, brokerCpuMs };
}

async function fillCotal(): Promise<{ root: string; target: Target }> {
  const br = await startCotalRoot("one-add");
  const t0 = performance.now();
  await spaceAdd({ root: br.root, names: names("fill", 0, tenants - 1), lockWaitMs: 120_000 });
  console.log(`cotal: filled to ${tenants} tenants in ${(performance.now() - t0).toFixed(0)} ms`);
  const tmp = await tempRoot("cotal-bench-one-add-tmp-");
  onCleanup(`remove ${tmp.path}`, () => tmp.cleanup());
  return { root: br.root, target: { url: br.started.url, brokerPid: readRuntime(br.layout)?.owner.pid, tmp: tmp.path } };
}

async function fillPeer(): Promise<{ configFile: string; target: Target }> {
  const peer = await startPeerBroker("one-add-peer", { syncAlways: SYNC_ALWAYS, allowDelete: true });
  const t0 = performance.now();
  const accounts = await peer.push(names("fill", 0, tenants - 1));
  await mapPool(accounts, PROVISION_CONCURRENCY, (rec) => provisionSpace(peer.broker.url, rec));
  console.log(`peer: filled to ${tenants} accounts in ${(performance.now() - t0).toFixed(0)} ms`);
  const tmp = await tempRoot("cotal-bench-one-add-peer-");
  onCleanup(`remove ${tmp.path}`, () => tmp.cleanup());
  const configFile = join(tmp.path, "peer.json");
  writeFileSync(configFile, JSON.stringify({ url: peer.broker.url, sysCreds: peer.sysCreds(), operator: peer.trust.operator }), { mode: 0o600 });
  return { configFile, target: { url: peer.broker.url, brokerPid: peer.broker.pid, tmp: tmp.path } };
}

const FIGURES: [keyof Sample, string][] = [
  ["usableMs", "add until usable"],
  ["addProcessMs", "  add process"],
  ["useMs", "  then the tenant's connect + KV put"],
  ["addCpuMs", "  add process CPU"],
  ["addBrokerCpuMs", "  broker CPU during the add"],
  ["refusedMs", "removal until refused"],
  ["rmProcessMs", "  rm process"],
  ["rmCpuMs", "  rm process CPU"],
  ["rmBrokerCpuMs", "  broker CPU during the rm"],
];

function summaryTable(samples: readonly Sample[], arms: readonly string[]): string {
  const cell = (arm: string, k: keyof Sample): string => {
    const s = summarize(samples.filter((x) => x.arm === arm).map((x) => x[k] as number));
    return `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  };
  return table(["ms: median (min-max)", ...arms], FIGURES.map(([k, label]) => [label, ...arms.map((a) => cell(a, k))]));
}

function phaseTable(samples: readonly Sample[], arm: string, which: "addPhases" | "rmPhases"): string {
  const mine = samples.filter((x) => x.arm === arm);
  const keys = [...new Set(mine.flatMap((x) => Object.keys(x[which])))];
  return table(["phase", "median ms", "min", "max"], keys.map((k) => {
    const s = summarize(mine.map((x) => x[which][k] ?? 0));
    return [k, s.median.toFixed(1), s.min.toFixed(1), s.max.toFixed(1)];
  }));
}

/** Each round's arm ÷ the peer's, then the median of those (the arms ran back to back). */
function pairedRatios(samples: readonly Sample[], arm: string, peer: string, k: keyof Sample, rounds: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const a = samples.find((x) => x.arm === arm && (x as Sample & { round: number }).round === r);
    const b = samples.find((x) => x.arm === peer && (x as Sample & { round: number }).round === r);
    if (a && b) out.push(round((a[k] as number) / (b[k] as number), 3));
  }
  return out;
}

await runBench(async () => {
  const cotal = await fillCotal();
  const peer = skip.has("peer") ? undefined : await fillPeer();
  console.log(`${tenants} tenants, ${runs} round(s), poll ${pollMs} ms; ${jetStreamSyncNote(SYNC_ALWAYS)} on both servers; cli ${CLI}`);
  type Arm = { name: string; go: (space: string) => Promise<Sample> };
  const arms: Arm[] = [
    { name: "cotal", go: (s) => cotalRound(cotal.target, cotal.root, s, false) },
    ...(skip.has("logged") ? [] : [{ name: "cotal --log-format json", go: (s: string) => cotalRound(cotal.target, cotal.root, s, true) }]),
    ...(peer ? [{ name: "peer", go: (s: string) => peerRound(peer.target, peer.configFile, s) }] : []),
  ];
  // warm-up, not counted: V8's code cache for the CLI, the page cache, the JIT of this process
  for (const a of arms) await a.go(`warm-${a.name.replace(/[^a-z]/g, "")}`);
  const samples: (Sample & { round: number })[] = [];
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < arms.length; i++) {
      const a = arms[(i + r) % arms.length] as Arm;
      const s = await a.go(`one${String(r).padStart(3, "0")}-${a.name.replace(/[^a-z]/g, "")}`);
      samples.push({ ...s, round: r });
      console.log(`  round ${r + 1} ${s.arm}: usable ${s.usableMs.toFixed(0)} ms, refused ${s.refusedMs.toFixed(0)} ms`);
    }
  }
  const armNames = [...new Set(samples.map((s) => s.arm))];
  console.log(`\none add and one removal at ${tenants} tenants, whole processes (${runs} rounds, order rotated)`);
  console.log(summaryTable(samples, armNames));
  for (const arm of armNames.filter((a) => a !== "cotal")) {
    console.log(`\n${arm}: where the add went`);
    console.log(phaseTable(samples, arm, "addPhases"));
    console.log(`${arm}: where the removal went`);
    console.log(phaseTable(samples, arm, "rmPhases"));
  }
  const peerArm = armNames.find((a) => a.startsWith("peer"));
  const ratios = peerArm ? { usable: pairedRatios(samples, "cotal", peerArm, "usableMs", runs), refused: pairedRatios(samples, "cotal", peerArm, "refusedMs", runs) } : undefined;
  if (ratios) console.log(`\ncotal ÷ peer, paired by round: until usable ${ratios.usable.join(" / ")} (median ${median(ratios.usable)}); until refused ${ratios.refused.join(" / ")} (median ${median(ratios.refused)})`);
  const reloads = skip.has("reload") ? undefined : await serverReloads(cotal.root, cotal.target.brokerPid, Math.max(5, runs));
  if (reloads) {
    const w = summarize(reloads.wallMs);
    const c = summarize(reloads.brokerCpuMs);
    console.log(`\nthe server's own reload at ${tenants} tenants (unchanged config, proven as the saga proves it; ${reloads.wallMs.length} runs): wall ${w.median.toFixed(0)} ms (${w.min.toFixed(0)}-${w.max.toFixed(0)}), broker CPU ${c.median.toFixed(0)} ms (${c.min.toFixed(0)}-${c.max.toFixed(0)})`);
  }
  const med = (arm: string, k: keyof Sample): number => median(samples.filter((s) => s.arm === arm).map((s) => s[k] as number));
  const targets = {
    addUsable: { target: "≤ 1000 ms (median, whole process)", value: round(med("cotal", "usableMs")), met: med("cotal", "usableMs") <= 1000 },
    removalRefused: { target: "≤ 1000 ms (median, whole process)", value: round(med("cotal", "refusedMs")), met: med("cotal", "refusedMs") <= 1000 },
  };
  console.log(`targets: ${JSON.stringify(targets)}`);
  console.log(`wrote ${writeResult("one-add", { tenants, runs, pollMs, syncAlways: SYNC_ALWAYS, samples, ratios, reloads, targets })}`);
});
