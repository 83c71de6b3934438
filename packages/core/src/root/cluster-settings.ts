import { isIPv4 } from "node:net";
import { RERUN, CotalError } from "../errors.js";
import type { RootLayout } from "./layout.js";
import { routeSecurityProblem, type RouteAuth, type RouteTls } from "./route-security.js";

/** One node of a cluster root: its `server_name` (also its directory under `nodes/`) and its two listeners. */
export interface ClusterNodeSettings {
  name: string;
  /** Client listener. */
  port: number;
  /** Route listener (`cluster { listen }`). */
  clusterPort: number;
  /**
   * The address this node listens on and the others dial it at: its host (docs/cluster.md "A cluster
   * across hosts"). Absent: the root's `host` (127.0.0.1), every node on one machine as before.
   */
  host?: string;
  /**
   * Test-only, absent outside the partition cells (test-live/fixtures/route-proxy.ts): the port the
   * other nodes dial for this node's routes, and that it advertises, a forwarder in front of
   * `clusterPort` that a cell can cut. Absent: the others dial `clusterPort` (docs/cluster.md).
   */
  testRoutePort?: number;
}

/** settings.json `cluster` (docs/cluster.md): fixed at creation, like the single broker's listener. */
export interface ClusterSettings {
  /** `cluster { name }`: every node carries the same one. */
  name: string;
  /** Replicas of the inventory and lease buckets (R3 on a three-node cluster). */
  replicas: number;
  nodes: ClusterNodeSettings[];
  /** Replicas of every tenant's own streams and buckets (absent: 1; provision/template.ts), fixed at creation. */
  tenantReplicas?: number;
  /**
   * Mutual TLS on every route (root/route-security.ts, docs/cluster.md "Route TLS and auth"): cotal's own
   * CA made at creation, or the operator's files. Absent on a root made before route TLS: plain routes.
   */
  routeTls?: RouteTls;
  /** Route authorization: the user every node's routes present (its password in `<root>/routes/route-auth.json`). Absent on older roots. */
  routeAuth?: RouteAuth;
}

/** The sizes `cotal up --cluster N` takes: JetStream's R3 needs three nodes; five is the most a loopback root makes sense with. */
export const CLUSTER_MIN = 3;
export const CLUSTER_MAX = 5;

const NODE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

function validPort(p: unknown): boolean {
  return Number.isInteger(p) && (p as number) >= 1 && (p as number) <= 65535;
}

/** A lower-case DNS name: what a node's `host` may be besides an IPv4 address (it is rendered into listen and route URLs). */
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Is `h` a host a node may name: an IPv4 address, or a lower-case DNS name that is not a malformed address? */
export function validNodeHost(h: unknown): h is string {
  if (typeof h !== "string") return false;
  return /^[\d.]+$/.test(h) ? isIPv4(h) : DNS_NAME.test(h);
}

/** The address node `n` listens on and is dialled at: its own host, else the root's. */
export function nodeHost(n: Pick<ClusterNodeSettings, "host">, rootHost: string): string {
  return n.host ?? rootHost;
}

/** The cluster a new root is created with: node i is `<serverName>-n<i>`, its ports (and hosts, if given) the ones handed in. */
export function newClusterSettings(serverName: string, clientPorts: readonly number[], clusterPorts: readonly number[], hosts?: readonly string[]): ClusterSettings {
  const nodes = clientPorts.map((port, i) => ({ name: `${serverName}-n${i + 1}`, port, clusterPort: clusterPorts[i] as number, ...(hosts?.[i] !== undefined ? { host: hosts[i] as string } : {}) }));
  return { name: serverName, replicas: Math.min(3, nodes.length), nodes };
}

/** The cluster of a root, checked; undefined on a single-broker root. A malformed one refuses, never guesses. */
export function clusterOf(layout: RootLayout, s: { cluster?: unknown } | undefined): ClusterSettings | undefined {
  const c = s?.cluster;
  if (c === undefined) return undefined;
  const bad = (why: string): never => {
    throw new CotalError("corrupt-record", `${layout.settingsFile}: cluster ${why}`, {
      next: `repair "cluster" in ${layout.settingsFile} (name, replicas, nodes [{name, port, clusterPort}], routeTls, routeAuth: docs/cluster.md) from a backup, then: ${RERUN}`,
    });
  };
  if (typeof c !== "object" || c === null) return bad("is not an object");
  const { name, replicas, nodes, tenantReplicas } = c as Record<string, unknown>;
  if (typeof name !== "string" || !NODE_NAME.test(name)) return bad("name is not a [a-z0-9-] name");
  if (!Array.isArray(nodes) || nodes.length < CLUSTER_MIN || nodes.length > CLUSTER_MAX) return bad(`nodes is not a list of ${CLUSTER_MIN}-${CLUSTER_MAX} nodes`);
  if (!Number.isInteger(replicas) || (replicas as number) < 1 || (replicas as number) > nodes.length) return bad(`replicas ${JSON.stringify(replicas)} is not 1-${nodes.length}`);
  if (tenantReplicas !== undefined && !(tenantReplicas === 1 || (tenantReplicas === 3 && nodes.length >= 3))) return bad(`tenantReplicas ${JSON.stringify(tenantReplicas)} is not 1 or 3`);
  const names = new Set<string>();
  // A port is taken per host: nodes on two hosts may each listen on 4222 (docs/cluster.md "Joining").
  const ports = new Set<string>();
  const rootHost = typeof (s as { host?: unknown }).host === "string" ? ((s as { host: string }).host) : "";
  for (const n of nodes as Record<string, unknown>[]) {
    if (typeof n?.name !== "string" || !NODE_NAME.test(n.name) || names.has(n.name)) return bad(`node name ${JSON.stringify(n?.name)} is missing, malformed or repeated`);
    if (n.host !== undefined && !validNodeHost(n.host)) return bad(`node ${n.name} has a host that is not an IPv4 address or a DNS name`);
    const at = (port: unknown): string => `${typeof n.host === "string" ? n.host : rootHost}:${String(port)}`;
    if (!validPort(n.port) || !validPort(n.clusterPort) || ports.has(at(n.port)) || ports.has(at(n.clusterPort)) || n.port === n.clusterPort) return bad(`node ${n.name} has a missing or repeated port`);
    names.add(n.name);
    ports.add(at(n.port)).add(at(n.clusterPort));
    if (n.testRoutePort !== undefined && (!validPort(n.testRoutePort) || ports.has(at(n.testRoutePort)))) return bad(`node ${n.name} has a malformed or repeated testRoutePort`);
    if (n.testRoutePort !== undefined) ports.add(at(n.testRoutePort));
  }
  const security = routeSecurityProblem(c as Record<string, unknown>, [...names]);
  if (security !== undefined) return bad(security);
  return c as ClusterSettings;
}

/** Pure: the route URLs node `self` dials, every other node's route listener on its host (or its test-only forwarder), sorted. */
export function routesFor(cluster: ClusterSettings, host: string, self: string): string[] {
  return cluster.nodes.filter((n) => n.name !== self).map((n) => `nats-route://${nodeHost(n, host)}:${n.testRoutePort ?? n.clusterPort}`).sort();
}

/** The replicas a root's tenant streams get: the cluster's `tenantReplicas`, else 1 (a single broker is always 1). */
export function tenantReplicasOf(cluster: ClusterSettings | undefined): number {
  return cluster?.tenantReplicas ?? 1;
}

/**
 * Pure: the name `cotal node add` gives the next node, `<cluster>-n<k>` one past the highest k in
 * settings or in `used` (the names under `nodes/`, where a forgotten node's directory stays): JetStream
 * remembers a removed peer by its name, so a name is never given twice.
 */
export function nextNodeName(cluster: Pick<ClusterSettings, "name" | "nodes">, used: readonly string[] = []): string {
  const re = new RegExp(`^${cluster.name}-n(\\d+)$`);
  const taken = [...cluster.nodes.map((n) => n.name), ...used].map((n) => Number(re.exec(n)?.[1] ?? 0));
  return `${cluster.name}-n${Math.max(cluster.nodes.length, ...taken) + 1}`;
}

/** Pure: the ports on `host` some node of `cluster` already listens on (client, route, test forwarder). */
export function portsTakenOn(cluster: Pick<ClusterSettings, "nodes">, host: string, rootHost: string): Set<number> {
  const on = cluster.nodes.filter((n) => nodeHost(n, rootHost) === host);
  return new Set(on.flatMap((n) => [n.port, n.clusterPort, ...(n.testRoutePort !== undefined ? [n.testRoutePort] : [])]));
}
