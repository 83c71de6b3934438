import { join } from "node:path";
import { rmSync } from "node:fs";
import type { ProcessOwner } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";

/**
 * run/stop-intent.json: `cotal down` names the foreground broker it is about to stop, so the `cotal up`
 * that serves it can tell an operator's stop (exit 0: systemd neither fails nor restarts the unit) from
 * a broker that died on its own (non-zero: `Restart=on-failure` starts it again). docs/service.md.
 */
interface StopIntent {
  format: "cotal.stop-intent/1";
  owner: ProcessOwner;
  purpose: string;
  at: string;
}

function intentFile(layout: RootLayout): string {
  return join(layout.runDir, "stop-intent.json");
}

/** Written before the stop's first signal: the foreground `up` reads it the moment its child exits. */
export function recordStopIntent(layout: RootLayout, owner: ProcessOwner, purpose: string): void {
  const intent: StopIntent = { format: "cotal.stop-intent/1", owner, purpose, at: new Date().toISOString() };
  writeJsonAtomic(intentFile(layout), intent);
}

export function clearStopIntent(layout: RootLayout): void {
  rmSync(intentFile(layout), { force: true });
}

/**
 * Was this process stopped on purpose? True only when the intent names the same process (pid and, when
 * both are known, its start ticks: a recycled pid is another process). A matching intent is consumed.
 */
export function takeStopIntent(layout: RootLayout, owner: Pick<ProcessOwner, "pid" | "procStart">): boolean {
  const text = readTextIfExists(intentFile(layout));
  if (text === undefined) return false;
  let intent: StopIntent | undefined;
  try {
    intent = JSON.parse(text) as StopIntent;
  } catch {
    return false;
  }
  if (intent?.format !== "cotal.stop-intent/1" || intent.owner?.pid !== owner.pid) return false;
  if (intent.owner.procStart !== undefined && owner.procStart !== undefined && intent.owner.procStart !== owner.procStart) return false;
  clearStopIntent(layout);
  return true;
}

/** How a foreground broker's exit reads to its supervisor. */
export type ForegroundEnd = { kind: "stopped"; by: "signal" | "cotal down" | "clean exit" } | { kind: "died"; how: string };

/**
 * Pure: a foreground `up` that was signalled, or whose broker `cotal down` stopped, ends cleanly
 * whatever nats-server's own exit code (it exits 1 on SIGTERM). nats-server exits 0 only when told to
 * (SIGINT sent to it); any other end is the broker dying (kill -9, a crash).
 */
export function foregroundEnd(e: { signalled: boolean; intended: boolean; code: number | null; signal: NodeJS.Signals | null }): ForegroundEnd {
  if (e.signalled) return { kind: "stopped", by: "signal" };
  if (e.intended) return { kind: "stopped", by: "cotal down" };
  if (e.code === 0) return { kind: "stopped", by: "clean exit" };
  return { kind: "died", how: e.code !== null ? `exit code ${e.code}` : `signal ${e.signal ?? "unknown"}` };
}

/**
 * run/down.json: the cluster nodes of this host that `cotal down` stopped. A `cotal node run` that was
 * running then keeps its node down (state `stopped`) until `cotal up` clears the file, as a supervisor
 * keeps a unit an operator stopped; one started after it starts its node (docs/cluster.md "cotal node").
 * Written under the maintenance lock, which an agent holds to start its node, so no agent starts a
 * node between the stop and this file.
 */
interface DownNodes {
  format: "cotal.down/1";
  nodes: string[];
  purpose: string;
  at: string;
}

/** Which stop keeps a node down, for the agent's `stopped` line. */
export type DownStop = { purpose: string; at: string };

function downFile(layout: RootLayout): string {
  return join(layout.runDir, "down.json");
}

export function recordDownNodes(layout: RootLayout, nodes: readonly string[], purpose: string): void {
  const rec: DownNodes = { format: "cotal.down/1", nodes: [...nodes], purpose, at: new Date().toISOString() };
  writeJsonAtomic(downFile(layout), rec);
}

export function clearDownNodes(layout: RootLayout): void {
  rmSync(downFile(layout), { force: true });
}

/** The stop that keeps `node` down, or undefined: no file, an unreadable one (the agent starts its node), or another host's node. */
export function downStopOf(layout: RootLayout, node: string): DownStop | undefined {
  const text = readTextIfExists(downFile(layout));
  if (text === undefined) return undefined;
  try {
    const rec = JSON.parse(text) as DownNodes;
    return rec?.format === "cotal.down/1" && Array.isArray(rec.nodes) && rec.nodes.includes(node) ? { purpose: rec.purpose, at: rec.at } : undefined;
  } catch {
    return undefined;
  }
}
