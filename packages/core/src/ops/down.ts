import { GUARDS_ON, type Guards } from "../guards.js";
import { existsSync } from "node:fs";
import { stopBroker } from "../broker/process.js";
import { RootLayout } from "../root/layout.js";
import { brokerState, isLocalNode } from "../broker/runtime.js";
import { clearStopIntent, recordDownNodes, recordStopIntent } from "../broker/stop-intent.js";
import { clusterOf } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";
import { preserveStateCut, type CutResult } from "../backup/cut.js";
import { withVerb } from "../verb/verb.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";

export interface DownResult {
  root: string;
  stopped: boolean;
  pid?: number;
  forced: boolean;
  /** Unrecorded servers of this root that were stopped too. */
  strays?: number[];
  /** A cluster's nodes on other hosts, left running and recorded: each is stopped on its own host (docs/cluster.md "Liveness by reachability"). */
  elsewhere?: string[];
  /** Set by `--preserve-state`: the cut journal reached ready. */
  cut?: Omit<CutResult, "stopped" | "pid" | "forced">;
}

/**
 * Stops the root's broker through the one verb preamble; stopping a stopped broker is a no-op success.
 * No journal entry refuses it: `down` is the printed way out of a stray, and every entry resumes from disk.
 */
export async function down(opts: { root: string; graceMs?: number; preserveState?: boolean; guards?: Guards }): Promise<DownResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const root = new RootLayout(opts.root).root;
  if (!existsSync(root)) return { root, stopped: false, forced: false };
  // A cut preserves one store for offline backup/restore, which a cluster root does online instead.
  if (opts.preserveState) refuseOfflineOnCluster(new RootLayout(root), guards, "down --preserve-state", "has no offline backup or restore to cut for", "cotal space list   # back up each space online on the running cluster (cotal space backup NAME --out DIR): no cut needed");
  // The preamble has already stopped leaked private brokers (a killed verb's, never the journal's own attempt).
  return withVerb({ root, guards, purpose: "cotal down", journal: { verb: "down" }, certain: false }, async ({ layout, lock, reaped }) => {
    const intended = !guards.DOWN_WITHOUT_STOP_INTENT && markForegroundStop(layout, opts.preserveState ? "cotal down --preserve-state" : "cotal down");
    try {
      // Hook (backup/cut.ts): the cut journals cut-intent → cut-committed, stops the broker, then ready.
      if (opts.preserveState) {
        const { stopped, pid, forced, ...cut } = await preserveStateCut(layout, lock, opts.graceMs, guards);
        return { root: layout.root, stopped, ...(pid !== undefined ? { pid } : {}), forced, cut };
      }
      const r = await stopBroker(layout, opts.graceMs, guards);
      if (!guards.DOWN_WITHOUT_STOP_INTENT) keepClusterNodesDown(layout, r.elsewhere ?? []);
      return { root: layout.root, ...r, stopped: r.stopped || reaped.length > 0, strays: [...reaped, ...r.strays] };
    } catch (err) {
      // A broker still running after a refused or failed stop must not pass for stopped when it dies later.
      if (intended && brokerState(layout).running) clearStopIntent(layout);
      throw err;
    }
  });
}

/**
 * A foreground `cotal up` (a systemd unit, a terminal) serves the broker: say this stop is on purpose,
 * so it exits 0 and `Restart=on-failure` does not start the broker again (docs/service.md).
 */
function markForegroundStop(layout: RootLayout, purpose: string): boolean {
  const state = brokerState(layout);
  if (!state.running || state.runtime.detached) return false;
  recordStopIntent(layout, state.runtime.owner, purpose);
  return true;
}

/** A cluster root: the nodes of this host stay down under their `cotal node run` until `cotal up` (broker/stop-intent.ts). */
function keepClusterNodesDown(layout: RootLayout, elsewhere: readonly string[]): void {
  const settings = loadSettings(layout);
  const cluster = settings ? clusterOf(layout, settings) : undefined;
  if (!settings || !cluster) return;
  const mine = cluster.nodes.filter((n) => isLocalNode(n, settings.host) && !elsewhere.includes(n.name)).map((n) => n.name);
  if (mine.length > 0) recordDownNodes(layout, mine, "cotal down");
}
