import type { BrokerRuntime } from "../broker/runtime.js";
import type { NodeProof } from "../inventory/record.js";
import type { RootLayout } from "../root/layout.js";
import { clusterReloader, type MaterialStore } from "./cluster-reloader.js";
import { reloadAndProve, type ReloadVerdict } from "./reload.js";
import type { Guards } from "../guards.js";

/**
 * What the saga needs from the running broker: reload the config at server.conf and return the
 * server's own verdict on it (docs/resume.md). Never the proof CAS: the saga writes that.
 */
export interface Reloader {
  reload(opts?: ReloaderOptions): Promise<ReloadVerdict>;
}

export interface ReloaderOptions {
  timeoutMs?: number;
  /** The writer's lease re-check. A cluster reload calls it before each node's rename and renames nothing without it. */
  fence?: () => Promise<boolean>;
  /**
   * Cluster only. The claim removes nothing (saga/partial-proofs.ts mayLeaveNodesBehind): the reload may
   * then leave a node that is down behind instead of refusing, once another node proved it (invariant 4).
   */
  mayLeaveBehind?: boolean;
  /**
   * Cluster only. A reload that some node could not prove hands the nodes that did prove it here before
   * it refuses, so the claim records them (docs/cluster.md "Partial proofs"); the writer owns the CAS.
   */
  recordPartial?: (proofs: Record<string, Omit<NodeProof, "appliedGeneration">>) => Promise<void>;
  /**
   * Cluster only. The writer's lease id: with it, a node on another host is not renamed from here but
   * asked of its agent, which applies while this lease holds (docs/cluster.md "The writer asks, the agent applies").
   */
  leaseId?: string;
}

/**
 * The running broker of a root: the RELOAD request (2.10+) or SIGHUP, proven as saga/reload.ts says;
 * on a cluster root, the same for every node in turn (saga/cluster-reloader.ts), after publishing the
 * node material to `material` (the session's store).
 */
export function brokerReloader(runtime: BrokerRuntime, layout: RootLayout | undefined, guards: Guards, material?: MaterialStore): Reloader {
  if (runtime.nodes && layout) return clusterReloader(runtime, runtime.nodes, layout, guards, material);
  return { reload: (opts = {}) => reloadAndProve(runtime, { ...opts, ...(layout ? { layout } : {}), guards }) };
}
