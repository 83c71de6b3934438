import { readFileSync, rmSync } from "node:fs";
import { hostname, networkInterfaces } from "node:os";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";
import { ownerStatus, pidStopped, processStartTicks, type ProcessOwner } from "../lock/process-identity.js";
import { clusterOf, nodeHost, type ClusterNodeSettings } from "../root/cluster-settings.js";
import { loadSettings } from "../root/settings.js";

/** run/broker.json: which nats-server process serves this root, so status/down/reload find it. */
export interface BrokerRuntime {
  format: "cotal.runtime/1";
  owner: ProcessOwner;
  url: string;
  host: string;
  port: number;
  configPath: string;
  logFile: string;
  serverVersion: string;
  detached: boolean;
  startedAt: string;
  /**
   * A cluster root only (docs/cluster.md): every node's process. The fields above then describe the
   * first node as written; `brokerState` and the verbs' session put the node they go through on top.
   */
  nodes?: NodeRuntime[];
}

/** One cluster node's nats-server, as run/broker.json records it. */
export interface NodeRuntime {
  name: string;
  owner: ProcessOwner;
  url: string;
  port: number;
  clusterPort: number;
  configPath: string;
  logFile: string;
}

/**
 * The host a node's clients reach it on: its own URL's, not the root's (`BrokerRuntime.host` is node
 * 1's). On hosts of their own (docs/cluster.md "A cluster across hosts") each node listens on its address.
 */
export function nodeClientHost(node: Pick<NodeRuntime, "url">, fallback: string): string {
  try {
    return new URL(node.url).hostname.replace(/^\[(.*)\]$/, "$1") || fallback;
  } catch {
    return fallback;
  }
}

/**
 * Is `host` an address of this machine (or network namespace), so `up` can start a node listening on
 * it and a reload may signal it? A wildcard listen address (0.0.0.0, ::) is this machine too.
 */
export function isLocalHost(host: string, addresses: readonly string[] = localAddresses()): boolean {
  return host === "localhost" || host.startsWith("127.") || host === "0.0.0.0" || host === "::" || host === "::1" || addresses.includes(host);
}

/** A node of settings.json on this host (its address is this machine's or namespace's): `up` starts it, `down` keeps it down. */
export function isLocalNode(node: ClusterNodeSettings, rootHost: string): boolean {
  return isLocalHost(nodeHost(node, rootHost));
}

function localAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
}

/**
 * Does this node run on another host (docs/cluster.md "Liveness by reachability")? Recorded by another
 * host's cotal (its owner's hostname is not ours), or listening on an address that is not one of this
 * host's. Its pid means nothing here: it is judged by whether it answers, and never signalled.
 */
export function nodeElsewhere(node: Pick<NodeRuntime, "owner" | "url">): boolean {
  return node.owner.host !== hostname() || !isLocalHost(nodeClientHost(node, "127.0.0.1"));
}

/** Is this node's recorded process alive on this host and reading its own config (pids get recycled)? Never for a node elsewhere. */
export function nodeAlive(node: NodeRuntime): boolean {
  return !nodeElsewhere(node) && ownerStatus(node.owner) === "alive" && servesConfig(node.owner.pid, node.configPath);
}

/** Is this node's process stopped (SIGSTOP) on this host? A node elsewhere is not judged from here. */
export function nodeStopped(node: Pick<NodeRuntime, "owner" | "url">): boolean {
  return !nodeElsewhere(node) && pidStopped(node.owner.pid);
}

export function writeRuntime(layout: RootLayout, rt: Omit<BrokerRuntime, "format">): BrokerRuntime {
  const rec: BrokerRuntime = { format: "cotal.runtime/1", ...rt };
  writeJsonAtomic(layout.runtimeFile, rec);
  return rec;
}

export function readRuntime(layout: RootLayout): BrokerRuntime | undefined {
  return runtimeIn(layout.runtimeFile);
}

/** A runtime record in `file`, or undefined when it is absent or not one. */
function runtimeIn(file: string): BrokerRuntime | undefined {
  const text = readTextIfExists(file);
  if (text === undefined) return undefined;
  try {
    const rt = JSON.parse(text) as BrokerRuntime;
    return rt.format === "cotal.runtime/1" && typeof rt.owner?.pid === "number" ? rt : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A node's own runtime record (docs/cluster.md "Each host's own runtime"): the runtime as its host sees
 * it, naming that node alone, written beside the node by whoever started it there. Its agent reads it
 * first, so the control host's run/broker.json need not be the one file every host shares.
 */
export function writeNodeRuntime(layout: RootLayout, rt: Omit<BrokerRuntime, "format">, node: NodeRuntime): void {
  writeJsonAtomic(layout.nodeRuntimeFile(node.name), { ...throughNode({ format: "cotal.runtime/1", ...rt }, node), nodes: [node] });
}

/** Node `name`'s own runtime record, when its host has one (a root made before them has none). */
export function readNodeRuntime(layout: RootLayout, name: string): BrokerRuntime | undefined {
  const rt = runtimeIn(layout.nodeRuntimeFile(name));
  return rt?.nodes?.length === 1 && rt.nodes[0]?.name === name ? rt : undefined;
}

export function clearRuntime(layout: RootLayout): void {
  rmSync(layout.runtimeFile, { force: true });
  rmSync(layout.pidFile, { force: true });
}

/** A live pid is ours only if it is a nats-server reading this root's config (pids get recycled). */
function servesConfig(pid: number, configPath: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.some((a) => a.endsWith("nats-server")) && argv.includes(configPath);
  } catch {
    return false;
  }
}

export type BrokerState = { running: true; runtime: BrokerRuntime } | { running: false; runtime?: BrokerRuntime; stale: boolean };

/**
 * Is the root's broker running? A cluster runs while any recorded node does (docs/cluster.md "Verbs
 * through any node"): with node 1 down its runtime comes back through the first live node, whose
 * fields are then on top. `firstNodeOnly` (the VERBS_FIRST_NODE_ONLY switch) asks node 1 alone.
 */
export function brokerState(layout: RootLayout, opts: { firstNodeOnly?: boolean; unrecordedIgnored?: boolean } = {}): BrokerState {
  const read = readRuntime(layout);
  const rt = read && !opts.unrecordedIgnored ? withUnrecordedNodes(layout, read) : read;
  if (!rt) return { running: false, stale: false };
  if (!(rt.nodes && nodeElsewhere(rt)) && ownerStatus(rt.owner) === "alive" && servesConfig(rt.owner.pid, rt.configPath)) return { running: true, runtime: rt };
  // A node on another host may run: the verb's session asks every node and goes through one that answers.
  const live = opts.firstNodeOnly ? undefined : (rt.nodes?.find(nodeAlive) ?? rt.nodes?.find(nodeElsewhere));
  if (live) return { running: true, runtime: throughNode(rt, live) };
  return { running: false, runtime: rt, stale: true };
}

/** The owner host of a node this host's run/broker.json does not record (`withUnrecordedNodes`): never this host's name. */
export const UNRECORDED_HOST = "(not recorded here)";

/** True for a node known from settings.json alone: no pid of it is known here, so none is ever signalled or read. */
export function unrecorded(node: Pick<NodeRuntime, "owner">): boolean {
  return node.owner.host === UNRECORDED_HOST;
}

/**
 * A cluster's runtime with every node of settings.json that run/broker.json does not record added,
 * in settings order (docs/cluster.md "Finding the nodes"): on hosts of their own each host records only
 * its own node, yet the control host knows every node's client URL from the settings and asks it.
 * Such a node is elsewhere (`nodeElsewhere`): judged by its answer, never by a pid.
 */
export function withUnrecordedNodes(layout: RootLayout, rt: BrokerRuntime): BrokerRuntime {
  if (!rt.nodes) return rt;
  const cluster = clusterQuiet(layout);
  if (!cluster) return rt;
  const recorded = new Map(rt.nodes.map((n) => [n.name, n] as const));
  // Only a node on another host: one of this host's is recorded by whoever starts it here, or not running.
  const missing = cluster.nodes.filter((n) => !recorded.has(n.name) && !isLocalNode(n, rt.host));
  if (missing.length === 0) return rt;
  const known = (n: (typeof missing)[number]): NodeRuntime => ({ name: n.name, owner: { pid: 0, host: UNRECORDED_HOST }, url: `nats://${nodeHost(n, rt.host)}:${n.port}`, port: n.port, clusterPort: n.clusterPort, configPath: layout.nodeServerConf(n.name), logFile: layout.nodeLogFile(n.name) });
  const nodes = cluster.nodes.flatMap((n) => {
    const r = recorded.get(n.name);
    return r ? [r] : missing.includes(n) ? [known(n)] : [];
  });
  return { ...rt, nodes: [...nodes, ...rt.nodes.filter((n) => !cluster.nodes.some((c) => c.name === n.name))] };
}

function clusterQuiet(layout: RootLayout): ReturnType<typeof clusterOf> {
  try {
    return clusterOf(layout, loadSettings(layout));
  } catch {
    return undefined; // an unreadable settings.json refuses in the verb that needs it, not in a liveness read
  }
}

/** A cluster's runtime with `node`'s fields on top: the node a verb goes through (its url, pid, config). */
export function throughNode(rt: BrokerRuntime, node: NodeRuntime): BrokerRuntime {
  return { ...rt, owner: node.owner, url: node.url, port: node.port, configPath: node.configPath, logFile: node.logFile };
}

export function ownerOf(pid: number, host: string): ProcessOwner {
  const procStart = processStartTicks(pid);
  return { pid, host, ...(procStart ? { procStart } : {}) };
}
