import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { carryRaftState, raftDir, strandedRaftState } from "../src/broker/raft-state.js";
import { createTempRoot, type TempRoot } from "../src/testing/index.js";
import { refusalOf } from "./fixtures/records.js";

// docs/cluster.md "The system account on a cluster": nats-server keeps a cluster's raft groups under
// <store>/jetstream/<system account>/_js_, so a rotation carries them to the new account's directory.

const roots: TempRoot[] = [];
afterEach(() => roots.splice(0).forEach((r) => r.remove()));
const [OLD, NEW, OLDER] = ["AOLD", "ANEW", "AOLDER"];

function withRaft(root: TempRoot, node: string, account: string): string {
  const dir = raftDir(root.layout.nodeStoreDir(node), account);
  mkdirSync(join(dir, "_meta_"), { recursive: true });
  writeFileSync(join(dir, "_meta_", "snap"), "assignments");
  return dir;
}

describe("a cluster's raft state across a system account rotation", () => {
  it("is carried node by node to the new account's directory, once; a node that never ran is left alone", () => {
    const root = createTempRoot();
    roots.push(root);
    for (const n of ["c-n1", "c-n2"]) withRaft(root, n, OLD);
    expect(carryRaftState(root.layout, ["c-n1", "c-n2", "c-n3"], OLD, NEW)).toEqual(["c-n1", "c-n2"]);
    for (const n of ["c-n1", "c-n2"]) {
      const store = root.layout.nodeStoreDir(n);
      expect(readdirSync(join(raftDir(store, NEW), "_meta_"))).toEqual(["snap"]);
      expect(existsSync(raftDir(store, OLD)), n).toBe(false);
      expect(strandedRaftState(store, NEW)).toEqual([]);
    }
    // Again (a resumed rotation): nothing left to carry.
    expect(carryRaftState(root.layout, ["c-n1", "c-n2", "c-n3"], OLD, NEW)).toEqual([]);
    expect(carryRaftState(root.layout, ["c-n1"], NEW, NEW)).toEqual([]);
  });

  it("refuses a node holding both, moving nothing of it: it booted on the new account first", () => {
    const root = createTempRoot();
    roots.push(root);
    const kept = withRaft(root, "c-n1", OLD);
    withRaft(root, "c-n1", NEW);
    const e = refusalOf(() => carryRaftState(root.layout, ["c-n1"], OLD, NEW));
    expect([e.code, e.message]).toEqual(["corrupt-record", expect.stringContaining("c-n1 holds raft state under both")]);
    expect(existsSync(kept)).toBe(true);
  });

  it("finds the raft state a node would strand: another account's _js_ and none of the current one's", () => {
    const root = createTempRoot();
    roots.push(root);
    const store = root.layout.nodeStoreDir("c-n1");
    expect(strandedRaftState(store, NEW)).toEqual([]); // never ran
    withRaft(root, "c-n1", OLD);
    mkdirSync(join(store, "jetstream", "ATENANT", "streams"), { recursive: true }); // a tenant's streams are not raft state
    expect(strandedRaftState(store, NEW)).toEqual([OLD]);
    withRaft(root, "c-n1", OLDER);
    expect(strandedRaftState(store, NEW).sort()).toEqual([OLD, OLDER].sort());
    withRaft(root, "c-n1", NEW);
    expect(strandedRaftState(store, NEW)).toEqual([]); // its own is there: it boots on it
  });
});

describe("a node about to boot on a system account whose raft state is elsewhere", () => {
  it("is refused before it starts, with the carry that saves its streams as the printed next", async () => {
    const { refuseStrandedRaftState } = await import("../src/ops/cluster-nodes.js");
    const root = createTempRoot();
    roots.push(root);
    const config = `server_name: c-n1\nsystem_account: ${NEW}\n`;
    refuseStrandedRaftState(root.layout, "c-n1", config); // a node that never ran boots
    const from = withRaft(root, "c-n1", OLD);
    const e = refusalOf(() => refuseStrandedRaftState(root.layout, "c-n1", config));
    expect(e.code).toBe("corrupt-record");
    expect(e.next).toBe(`mkdir -p ${join(root.layout.nodeStoreDir("c-n1"), "jetstream", NEW)} && mv ${from} ${raftDir(root.layout.nodeStoreDir("c-n1"), NEW)}   # the retired account's raft state, carried over; then start the node again`);
    // The printed line runs verbatim from another directory and carries the state: the node then boots.
    execFileSync("bash", ["-c", e.next as string], { cwd: "/" });
    expect(strandedRaftState(root.layout.nodeStoreDir("c-n1"), NEW)).toEqual([]);
    expect(readdirSync(join(raftDir(root.layout.nodeStoreDir("c-n1"), NEW), "_meta_"))).toEqual(["snap"]);
    refuseStrandedRaftState(root.layout, "c-n1", config);
    rmSync(raftDir(root.layout.nodeStoreDir("c-n1"), NEW), { recursive: true });
    withRaft(root, "c-n1", OLD);
    withRaft(root, "c-n1", OLDER);
    expect(refusalOf(() => refuseStrandedRaftState(root.layout, "c-n1", config)).next).toMatch(/^ls -lt /);
    refuseStrandedRaftState(root.layout, "c-n1", "server_name: c-n1\n"); // no system account named: nothing to judge
  });
});
