import { type Guards } from "../guards.js";
import type { ChildProcess } from "node:child_process";
import { hostname } from "node:os";
import { RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, readTextIfExists } from "../root/secret-files.js";
import { natsServerBinary, natsServerVersion } from "./binary.js";
import { logOffset, readLogSince, tail } from "./log-proof.js";
import { brokerState, clearRuntime, nodeAlive, nodeElsewhere, ownerOf, throughNode, writeRuntime, type BrokerRuntime, type NodeRuntime } from "./runtime.js";
import { serversOfRoot } from "./server-scan.js";
import { spawnServer, untilReady } from "./spawn-server.js";
import { stopProcess } from "./stop-process.js";

export interface StartOptions {
  host: string;
  port: number;
  detach: boolean;
  readyTimeoutMs?: number;
  /** The verb's guards (IGNORE_STRAYS; docs/ablation.md). */
  guards: Guards;
}

export interface StartedBroker {
  runtime: BrokerRuntime;
  /** Foreground only: the child, so the caller can wait on it and forward signals. */
  child?: ChildProcess;
}

/**
 * Starts nats-server on the root's rendered config and waits for "Server is ready" in the log it
 * writes after our spawn. An early exit or a timeout refuses with the log tail.
 */
export async function startBroker(layout: RootLayout, opts: StartOptions): Promise<StartedBroker> {
  // One server per store: a server of this root that no record names (a killed `up`) refuses here.
  const strays = serversOfRoot(layout, opts.guards);
  if (strays.length > 0) {
    throw new CotalError("broker-running", `a nats-server of this root is already running without a record: ${strays.map((p) => `pid ${p.pid} (${p.config})`).join(", ")}; a second one on the same store would corrupt it`, {
      next: "cotal down   # stops every server of this root, recorded or not",
      details: { strays },
    });
  }
  const bin = natsServerBinary();
  const version = natsServerVersion(bin);
  ensureSecretDir(layout.logDir);
  ensureSecretDir(layout.runDir);
  ensureSecretDir(layout.storeDir);
  const offset = logOffset(layout.logFile);
  const stdioOffset = logOffset(layout.stdioLogFile);
  const server = await spawnServer(bin, ["-c", layout.serverConf], { output: layout.stdioLogFile, detached: opts.detach });
  const child = server.child;
  // Recorded before the wait: a `cotal up` killed while the server restores leaves a server that
  // status and down can see, never one nobody knows about.
  const record = {
    owner: ownerOf(server.pid, hostname()),
    url: `nats://${opts.host}:${opts.port}`,
    host: opts.host,
    port: opts.port,
    configPath: layout.serverConf,
    logFile: layout.logFile,
    serverVersion: version.raw,
    detached: opts.detach,
    startedAt: new Date().toISOString(),
  };
  writeRuntime(layout, record);
  await failpoint("broker-spawned");
  // Only this child's own ready line counts, and only silence (not a long restore) times it out.
  if (!(await untilReady(server, layout.logFile, offset, opts.readyTimeoutMs ?? 20_000))) {
    // Silent for the whole idle window: ask it to stop, and only force a server that ignores that.
    const exited = server.done ? await server.exited : undefined;
    if (!exited) await stopProcess(server.pid, 15_000, () => server.done);
    clearRuntime(layout);
    const logs = `${tail(readLogSince(layout.logFile, offset))}\n${tail(readLogSince(layout.stdioLogFile, stdioOffset))}`.trim();
    throw new CotalError("broker-start-failed", `nats-server did not become ready${exited ? ` (exited with ${exited.code ?? exited.signal})` : " in time"}:\n${logs}`, {
      next: `tail -n 40 ${layout.logFile}   # the server's reason; a taken port: stop what holds ${opts.host}:${opts.port}, then ${RERUN}`,
      details: { logFile: layout.logFile },
    });
  }
  if (opts.detach) child.unref();
  const runtime = writeRuntime(layout, record);
  return opts.detach ? { runtime } : { runtime, child };
}

/**
 * SIGTERM, then SIGKILL after the grace period; clears the runtime record either way. Servers of
 * this root that no record names (a killed `up`, a leaked private broker) are stopped too.
 */
export async function stopBroker(layout: RootLayout, graceMs = 15_000, guards: Guards): Promise<{ stopped: boolean; pid?: number; forced: boolean; strays: number[]; elsewhere?: string[] }> {
  // What this host recorded only: a node known from settings.json alone is neither stopped nor written back from here.
  const state = brokerState(layout, { unrecordedIgnored: true });
  // A cluster's nodes on other hosts are stopped there, never signalled from here (docs/cluster.md "Liveness by reachability").
  const elsewhere = guards.SIGNAL_NODES_ELSEWHERE ? [] : (state.runtime?.nodes ?? []).filter(nodeElsewhere);
  const pid = state.running && !(state.runtime.nodes && nodeElsewhere(state.runtime)) ? state.runtime.owner.pid : undefined;
  let forced = false;
  // A cluster root (docs/cluster.md): every recorded node of this host that still runs its own config, together.
  const nodes = await stopClusterNodes(state.runtime?.nodes, graceMs);
  forced ||= nodes.forced;
  if (pid !== undefined && !nodes.pids.includes(pid)) forced = (await stopProcess(pid, graceMs)).forced;
  // On hosts that share a process table (the simulated ones), a node elsewhere shows here as a server of this root.
  const theirs = (s: { pid: number; config: string }): boolean => elsewhere.some((n) => n.owner.pid === s.pid && n.configPath === s.config);
  const strays = serversOfRoot(layout, guards).filter((s) => s.role !== "attempt" && s.pid !== pid && !nodes.pids.includes(s.pid) && !theirs(s));
  for (const s of strays) forced = (await stopProcess(s.pid, graceMs)).forced || forced;
  // The nodes elsewhere stay recorded: they still run, and the cluster with them.
  const first = elsewhere[0];
  if (first && state.runtime) writeRuntime(layout, { ...throughNode(state.runtime, first), nodes: elsewhere });
  else clearRuntime(layout);
  return { stopped: pid !== undefined || nodes.pids.length > 0 || strays.length > 0, ...(pid !== undefined ? { pid } : {}), forced, strays: strays.map((s) => s.pid), ...(elsewhere.length > 0 ? { elsewhere: elsewhere.map((n) => n.name) } : {}) };
}

/** Stops the recorded cluster nodes that are alive; returns their pids. */
async function stopClusterNodes(nodes: readonly NodeRuntime[] | undefined, graceMs: number): Promise<{ pids: number[]; forced: boolean }> {
  const alive = (nodes ?? []).filter(nodeAlive);
  const results = await Promise.all(alive.map((n) => stopProcess(n.owner.pid, graceMs)));
  return { pids: alive.map((n) => n.owner.pid), forced: results.some((r) => r.forced) };
}

export function readPidFile(layout: RootLayout): number | undefined {
  const t = readTextIfExists(layout.pidFile)?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}
