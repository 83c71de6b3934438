import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RootLayout } from "@cotal/core";
import { storedStreams, streamKind } from "../src/store-sizes.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function put(store: string, account: string, stream: string, file: string, bytes: number): void {
  const dir = join(store, "jetstream", account, "streams", stream, "msgs");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, file), Buffer.alloc(bytes));
}

describe("a tenant's streams from its store", () => {
  it("names KV buckets and object stores by their stream prefix", () => {
    expect([streamKind("KV_cotal_state_a"), streamKind("OBJ_files"), streamKind("cotal_events_a"), streamKind("KVX")]).toEqual(["kv", "object", "stream", "stream"]);
  });

  it("sums each stream's files, keeps to this account, skips a deletion in progress, and takes the largest node on a cluster root", () => {
    const layout = new RootLayout(mkdtempSync(join(tmpdir(), "cotal-store-")));
    dirs.push(layout.root);
    put(layout.storeDir, "AME", "cotal_events_a", "1.blk", 1000);
    put(layout.storeDir, "AME", "cotal_events_a", "2.blk", 500);
    put(layout.storeDir, "AME", "KV_cotal_state_a", "1.blk", 10);
    put(layout.storeDir, "AME", ".deleted_x", "1.blk", 99);
    put(layout.storeDir, "AOTHER", "theirs", "1.blk", 5);
    put(layout.nodeStoreDir("n1"), "AME", "KV_cotal_state_a", "1.blk", 70);
    expect(storedStreams(layout, "AME")).toEqual([
      { name: "KV_cotal_state_a", kind: "kv", bytes: 70 },
      { name: "cotal_events_a", kind: "stream", bytes: 1500 },
    ]);
    expect(storedStreams(layout, "ANONE")).toEqual([]);
  });
});
