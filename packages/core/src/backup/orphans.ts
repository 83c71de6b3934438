import { GUARDS_ON, type Guards } from "../guards.js";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CotalError } from "../errors.js";
import { brokerState } from "../broker/runtime.js";
import { withVerb } from "../verb/verb.js";
import { orphanStreams, storeOwners } from "./store-inventory.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";
import { RootLayout } from "../root/layout.js";

export interface OrphanCleanResult {
  root: string;
  orphans: { account: string; streams: string[] }[];
  removed: string[];
}

/**
 * `cotal clean orphan-streams [--yes]`: streams in store accounts that no record vouches for (a
 * removed tenant whose account was excluded or lost). Offline only: no server may hold the store.
 * Lists them, and deletes their account directories only with --yes.
 */
export async function cleanOrphanStreams(opts: { root: string; yes?: boolean; lockWaitMs?: number; guards?: Guards }): Promise<OrphanCleanResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const root = new RootLayout(opts.root);
  // Every node's store holds its own copy of each stream: one store's view is not the cluster's.
  refuseOfflineOnCluster(root, guards, "clean orphan-streams", "is not built (it scans one store on disk, and each node keeps its own)", "cotal broker reconcile   # the record beside the disk records; see docs/cluster.md \"Verbs on a cluster root\"");
  return withVerb({ root: opts.root, guards, purpose: "cotal clean orphan-streams", journal: { verb: "clean orphan-streams" }, lockWaitMs: opts.lockWaitMs ?? 30_000 }, async ({ layout, disk }) => {
    if (brokerState(layout).running) {
      throw new CotalError("broker-running", "orphan streams are removed from the store on disk, which no running server may hold", { next: "cotal down --preserve-state   # then cotal clean orphan-streams" });
    }
    const orphans = orphanStreams(layout.storeDir, storeOwners(layout, disk));
    if (orphans.length === 0 || !opts.yes) {
      if (orphans.length > 0 && !opts.yes) {
        throw new CotalError("confirmation-required", `the store holds streams of ${orphans.length} account(s) no record vouches for: ${orphans.map((o) => `${o.account} (${o.streams.join(", ")})`).join("; ")}; nothing was deleted`, {
          next: "cotal clean orphan-streams --yes",
          details: { orphans },
        });
      }
      return { root: layout.root, orphans, removed: [] };
    }
    const removed: string[] = [];
    for (const o of orphans) {
      const dir = join(layout.storeDir, "jetstream", o.account);
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    }
    return { root: layout.root, orphans, removed };
  });
}
