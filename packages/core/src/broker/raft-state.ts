import { existsSync, mkdirSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { CotalError } from "../errors.js";
import type { RootLayout } from "../root/layout.js";
import { fsyncDir } from "../root/secret-files.js";

// nats-server keeps every raft group of a clustered JetStream (the meta group, and each R>1 stream's
// and consumer's) under <store>/jetstream/<system account>/_js_. A node booted on a new system
// account finds no meta state there, forms an empty meta group, and about 30 s later deletes every
// stream of its store as orphaned (docs/cluster.md "The system account on a cluster"). So whatever
// changes the system account carries that directory over, node by node, before any node boots.

const RAFT_DIR = "_js_";

/** `<store>/jetstream/<account>/_js_`: where a node keeps its raft groups while `account` is the system account. */
export function raftDir(storeDir: string, systemAccount: string): string {
  return join(storeDir, "jetstream", systemAccount, RAFT_DIR);
}

/**
 * Moves each listed node's raft groups from the retired system account's directory to the new one's
 * (a rename on the node's own file system). Idempotent: a node already carried, or that never ran,
 * is left alone. Refuses, moving nothing more, when a node holds both: it booted on the new account
 * before the carry, and its empty meta state must not replace the real one unseen.
 */
export function carryRaftState(layout: RootLayout, nodes: readonly string[], from: string, to: string): string[] {
  const carried: string[] = [];
  if (from === to) return carried;
  for (const node of nodes) {
    const store = layout.nodeStoreDir(node);
    const [src, dst] = [raftDir(store, from), raftDir(store, to)];
    if (!existsSync(src)) continue;
    if (existsSync(dst)) {
      throw new CotalError("corrupt-record", `node ${node} holds raft state under both the retired system account (${src}) and the new one (${dst}): it booted on the new account before its state was carried over`, {
        next: `ls ${join(store, "jetstream")}   # keep the retired account's _js_ (the cluster's streams): move ${dst} aside, then cotal up --rotate-sys again`,
        details: { node, retired: src, current: dst },
      });
    }
    mkdirSync(join(store, "jetstream", to), { recursive: true, mode: 0o750 });
    renameSync(src, dst);
    fsyncDir(join(store, "jetstream", to));
    fsyncDir(join(store, "jetstream", from));
    carried.push(node);
  }
  return carried;
}

/**
 * The accounts a node's store holds raft groups for other than `current`: a node about to boot on
 * `current` with none of its own would start an empty meta group over these (see above).
 */
export function strandedRaftState(storeDir: string, current: string): string[] {
  const js = join(storeDir, "jetstream");
  if (!existsSync(js) || existsSync(raftDir(storeDir, current))) return [];
  return readdirSync(js).filter((a) => a !== current && existsSync(join(js, a, RAFT_DIR)));
}
