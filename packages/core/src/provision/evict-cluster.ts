import { GUARDS_ON, type Guards } from "../guards.js";
import type { BrokerRuntime } from "../broker/runtime.js";
import type { RootLayout } from "../root/layout.js";
import { evictAccountConnections, type EvictionResult } from "../broker/evict-connections.js";

/**
 * Cuts a removed tenant's live connections on every server of the broker: each node lists and
 * kicks only its own clients, so a cluster needs one pass per node (docs/cluster.md "Eviction").
 * Never throws, like the single pass; the per-node results are kept beside the summary.
 */
export async function evictEverywhere(layout: RootLayout, runtime: BrokerRuntime, accountPublicKey: string, guards: Guards = GUARDS_ON): Promise<EvictionResult> {
  if (!runtime.nodes || runtime.nodes.length === 0) return evictAccountConnections(layout, runtime.url, accountPublicKey, guards);
  const targets = guards.EVICT_FIRST_NODE_ONLY ? runtime.nodes.slice(0, 1) : runtime.nodes;
  const nodes: Record<string, EvictionResult> = {};
  for (const n of targets) nodes[n.name] = await evictAccountConnections(layout, n.url, accountPublicKey, guards);
  return summarise(accountPublicKey, nodes);
}

/** One result for the whole broker: failed if any node failed, else evicted if any node cut one, else skipped if all skipped. Pure. */
export function summarise(account: string, nodes: Record<string, EvictionResult>): EvictionResult {
  const all = Object.entries(nodes);
  const outcomes = all.map(([, r]) => r.outcome);
  const outcome: EvictionResult["outcome"] = outcomes.includes("failed") ? "failed" : outcomes.includes("evicted") ? "evicted" : outcomes.length > 0 && outcomes.every((o) => o === "skipped") ? "skipped" : "none";
  const reasons = all.filter(([, r]) => r.reason).map(([name, r]) => `${name}: ${r.reason}`);
  const version = all.find(([, r]) => r.serverVersion)?.[1].serverVersion;
  return {
    account,
    outcome,
    ...(reasons.length > 0 ? { reason: reasons.join("; ") } : {}),
    ...(version ? { serverVersion: version } : {}),
    kicked: all.flatMap(([, r]) => r.kicked),
    remaining: all.reduce((n, [, r]) => n + r.remaining, 0),
    nodes,
  };
}
