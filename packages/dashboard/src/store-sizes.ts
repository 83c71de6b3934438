import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { RootLayout } from "@cotal/core";
import { treeBytes } from "@cotal/core/root";

/** One stream of a tenant's JetStream store: a KV bucket is the stream `KV_<bucket>`, an object store `OBJ_<name>`. */
export interface StoredStream {
  name: string;
  kind: "stream" | "kv" | "object";
  /** Bytes of its directory in the store (messages, indexes, consumers); the largest node's on a cluster root. */
  bytes: number;
}

/** Pure: what a stream directory's name is to the tenant (nats.js names KV and object-store streams by these prefixes). */
export function streamKind(name: string): StoredStream["kind"] {
  return name.startsWith("KV_") ? "kv" : name.startsWith("OBJ_") ? "object" : "stream";
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The account's streams as its JetStream store holds them on disk (`<store>/jetstream/<account>/streams/<name>`,
 * nats-server's file store): read without a connection, so the page shows them with the broker stopped
 * too, and opens no new path into the server. A name starting with "." is a deletion in progress.
 * Memory streams keep nothing on disk and are not listed.
 */
export function storedStreams(layout: RootLayout, accountKey: string): StoredStream[] {
  const stores = [layout.storeDir, ...list(layout.nodesDir).map((n) => layout.nodeStoreDir(n))];
  const sizes = new Map<string, number>();
  for (const store of stores) {
    const dir = join(store, "jetstream", accountKey, "streams");
    for (const name of list(dir)) {
      if (name.startsWith(".")) continue;
      sizes.set(name, Math.max(sizes.get(name) ?? 0, treeBytes(join(dir, name))));
    }
  }
  return [...sizes].map(([name, bytes]) => ({ name, kind: streamKind(name), bytes })).sort((a, b) => (a.name < b.name ? -1 : 1));
}
