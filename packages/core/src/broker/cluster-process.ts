import { hostname } from "node:os";
import { dirname } from "node:path";
import { RERUN, CotalError } from "../errors.js";
import type { ClusterNodeSettings } from "../root/cluster-settings.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir } from "../root/secret-files.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { natsServerBinary } from "./binary.js";
import { logOffset, readLogSince, tail } from "./log-proof.js";
import { ownerOf, type NodeRuntime } from "./runtime.js";
import { spawnServer, untilReady, type ServerChild } from "./spawn-server.js";
import { stopProcess } from "./stop-process.js";
import { SystemClient } from "./system-client.js";

/**
 * Starts the given nodes of a cluster root on the configs already written to nodes/<name>/server.conf,
 * detached. `onSpawned` records them before the wait (a killed `up` leaves servers status and down see).
 * Each node must print its own ready line; one that does not stops every node started here.
 */
export async function startNodes(layout: RootLayout, host: string, nodes: readonly ClusterNodeSettings[], onSpawned: (spawned: NodeRuntime[]) => void, readyTimeoutMs = 20_000): Promise<NodeRuntime[]> {
  const bin = natsServerBinary();
  const started: { node: ClusterNodeSettings; server: ServerChild; offset: number; rt: NodeRuntime }[] = [];
  for (const node of nodes) {
    for (const d of [layout.nodeDir(node.name), layout.nodeStoreDir(node.name), dirname(layout.nodeLogFile(node.name))]) ensureSecretDir(d);
    const offset = logOffset(layout.nodeLogFile(node.name));
    const server = await spawnServer(bin, ["-c", layout.nodeServerConf(node.name)], { output: layout.nodeStdioLogFile(node.name), detached: true });
    started.push({
      node,
      server,
      offset,
      rt: { name: node.name, owner: ownerOf(server.pid, hostname()), url: `nats://${node.host ?? host}:${node.port}`, port: node.port, clusterPort: node.clusterPort, configPath: layout.nodeServerConf(node.name), logFile: layout.nodeLogFile(node.name) },
    });
  }
  onSpawned(started.map((s) => s.rt));
  const ready = await Promise.all(started.map((s) => untilReady(s.server, s.rt.logFile, s.offset, readyTimeoutMs)));
  const failed = started.filter((_, i) => !ready[i]);
  if (failed.length > 0) {
    await Promise.all(started.map((s) => (s.server.done ? undefined : stopProcess(s.server.pid, 10_000, () => s.server.done))));
    const logs = failed.map((s) => `${s.node.name}:\n${tail(readLogSince(s.rt.logFile, s.offset))}\n${tail(readLogSince(layout.nodeStdioLogFile(s.node.name), 0))}`.trim()).join("\n");
    throw new CotalError("broker-start-failed", `cluster node${failed.length > 1 ? "s" : ""} ${failed.map((s) => s.node.name).join(", ")} did not become ready:\n${logs}`, {
      next: `tail -n 40 ${failed.map((s) => s.rt.logFile).join(" ")}   # the servers' reasons; a taken port: stop what holds it, then ${RERUN}`,
      details: { nodes: failed.map((s) => s.node.name) },
    });
  }
  for (const s of started) s.server.child.unref();
  return started.map((s) => s.rt);
}

/** What a node said about the JetStream meta group, for the readiness check and its refusal. */
export interface MetaView {
  node: string;
  leader?: string;
  size?: number;
  error?: string;
}

/** Pure: formed when every node names the same meta leader and counts every member. */
export function metaFormed(views: readonly MetaView[], size: number): boolean {
  const leader = views[0]?.leader;
  return leader !== undefined && views.every((v) => v.leader === leader && v.size === size);
}

/**
 * Until the routes are up and JetStream has one meta leader every node agrees on (`$SYS.REQ.SERVER.<id>.JSZ`
 * from each node, 2.9+): only then can the R3 buckets be created. A cluster that never forms refuses with what each node said.
 */
export async function waitForMetaLeader(layout: RootLayout, nodes: readonly NodeRuntime[], timeoutMs = 30_000): Promise<MetaView[]> {
  const system = loadBrokerTrust(layout).system;
  const deadline = Date.now() + timeoutMs;
  let views: MetaView[] = [];
  for (;;) {
    views = await Promise.all(nodes.map((n) => metaOf(n, system)));
    if (metaFormed(views, nodes.length)) return views;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new CotalError("broker-start-failed", `the cluster did not elect a JetStream meta leader in ${Math.round(timeoutMs / 1000)} s:\n${views.map((v) => `  ${v.node}: ${v.error ?? `leader ${v.leader ?? "none"}, size ${v.size ?? "?"}`}`).join("\n")}`, {
    next: `cotal down && cotal up --detach   # the nodes' logs: ${nodes.map((n) => n.logFile).join(" ")}`,
    details: { views },
  });
}

async function metaOf(node: NodeRuntime, system: ReturnType<typeof loadBrokerTrust>["system"]): Promise<MetaView> {
  let client: SystemClient | undefined;
  try {
    client = await SystemClient.connect(node.url, system, { timeoutMs: 2_000, jsz: true });
    const m = await client.metaCluster(2_000);
    return { node: node.name, ...(m.leader ? { leader: m.leader } : {}), ...(m.size !== undefined ? { size: m.size } : {}) };
  } catch (err) {
    return { node: node.name, error: (err as Error).message };
  } finally {
    await client?.close();
  }
}
