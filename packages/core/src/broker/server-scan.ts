import { GUARDS_ON, type Guards } from "../guards.js";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pidAlive } from "../lock/process-identity.js";
import { stopProcess } from "./stop-process.js";
import type { RootLayout } from "../root/layout.js";

/** A nats-server process whose config lives under this root, found from /proc, record or not. */
export interface RootServer {
  pid: number;
  config: string;
  role: "broker" | "maintenance" | "attempt" | "node";
}

/** The `-c <config>` of a nats-server command line, or undefined when it is not one. */
export function serverConfigOf(argv: readonly string[]): string | undefined {
  if (!argv.some((a) => a === "nats-server" || a.endsWith("/nats-server"))) return undefined;
  const i = argv.findIndex((a) => a === "-c" || a === "--config");
  return i >= 0 ? argv[i + 1] : undefined;
}

/**
 * Every live nats-server reading a config of this root: the broker (server.conf), a private
 * broker reading the inventory (run/maintenance.conf), an attempt's private broker, or a cluster node (nodes/<name>/). One server per store is the rule,
 * so a process here that no record names is a stray the next verb must see (docs/refusals.md).
 */
export function serversOfRoot(layout: RootLayout, guards: Guards = GUARDS_ON): RootServer[] {
  if (guards.IGNORE_STRAYS) return [];
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const maintenanceConf = join(layout.runDir, "maintenance.conf");
  const out: RootServer[] = [];
  for (const p of pids) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const config = serverConfigOf(argv);
    if (!config) continue;
    const role = config === layout.serverConf ? "broker" : config === maintenanceConf ? "maintenance" : config.startsWith(`${layout.maintenanceDir}/`) ? "attempt" : config.startsWith(`${layout.nodesDir}/`) ? "node" : undefined;
    if (role && pidAlive(Number(p))) out.push({ pid: Number(p), config, role });
  }
  return out;
}

/**
 * Which servers of `servers` were leaked, as seen under the maintenance lock (pure). No other verb
 * of this host can be using a private broker then, nor an attempt's private broker outside
 * the journal's own attempt dir (`keepAttemptDir`): its verb died before recording it, or a clean-up
 * never knew it. The journal's attempt stays for `cotal clean restore-attempt`, which knows what it
 * installed; `null` (journal unreadable) keeps every attempt server (docs/refusals.md).
 */
export function leakedServers(servers: readonly RootServer[], keepAttemptDir: string | undefined | null): RootServer[] {
  return servers.filter((s) => s.role === "maintenance" || (s.role === "attempt" && keepAttemptDir !== null && (keepAttemptDir === undefined || !s.config.startsWith(`${keepAttemptDir}/`))));
}

/** Stops every server `leakedServers` names; returns their pids. Call only under the maintenance lock. */
export async function reapLeakedPrivateBrokers(layout: RootLayout, keepAttemptDir: string | undefined | null, guards: Guards): Promise<number[]> {
  const leaked = leakedServers(serversOfRoot(layout, guards), keepAttemptDir);
  for (const s of leaked) await stopProcess(s.pid, 5_000);
  return leaked.map((s) => s.pid);
}
