import { type Guards } from "../guards.js";
import { RERUN, CotalError } from "../errors.js";
import type { RootLayout } from "../root/layout.js";
import { isClusterRoot } from "../root/settings.js";

/** The usual way out: start the cluster, then the same command, which then runs online. */
export function onlineRerun(layout: RootLayout): string {
  return `cotal up --detach --root ${layout.root} && ${RERUN}   # on the running cluster`;
}

/**
 * docs/cluster.md "Verbs on a cluster root": a verb that works on a stopped single broker's store
 * refuses on a cluster root, before it writes anything. The record lives in the nodes' R3 buckets;
 * a private broker on one store (the root's `nats/`, which no node uses, or one node's, which has
 * no quorum alone) would read no record, or a stale one, and act on it.
 */
export function refuseOfflineOnCluster(layout: RootLayout, guards: Guards, verb: string, why: string, next: string = onlineRerun(layout)): void {
  if (guards.CLUSTER_OFFLINE_VERBS || !isClusterRoot(layout)) return;
  throw new CotalError("cluster-offline", `${verb} on a cluster root ${why}: the inventory record lives in the nodes' replicated (R3) buckets, which a private broker on one store cannot read without a quorum; nothing was changed`, {
    next,
    details: { verb, root: layout.root },
  });
}
