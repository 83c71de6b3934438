import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { accountInventory, loadAuthorityAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { loadSettings, maxPayloadOf } from "../root/settings.js";
import { clusterOf, nodeHost, routesFor, type ClusterSettings } from "../root/cluster-settings.js";
import { nodeRouteSecurity, routePins } from "../root/route-security.js";
import { configDigest, serverConfig, type ClusterBlock, type JetStreamMax, type RenderAccount } from "../render/server-config.js";
import { effectiveBudget } from "./jetstream-max.js";
import { heldAccountJwt } from "./node-hold.js";
import { renderFeatures } from "./render-features.js";

// What a cluster node's config is rendered from (docs/cluster.md "Real hosts: the design of what
// remains", step 3): public material only, a value that can travel (JSON, a KV bucket) to a node's
// host. Every JWT is public; the held variants are signed here, where the operator seed is, because a
// node cannot sign. No seed and no route password is in it: those a node gets, if at all, on its host.

/** An account as a node preloads it: its JWT, and the same claims held (no connection admitted). */
export interface MaterialAccount extends RenderAccount {
  heldJwt: string;
}

/** Everything of the root a node's render needs that is the same on every host, but the tenants. */
export interface NodeBase {
  format: "cotal.node-material/1";
  operator: { publicKey: string; jwt: string };
  system: { publicKey: string; jwt: string };
  authority: RenderAccount;
  /** The cluster as each node dials it: names, resolved hosts and ports; the route security's own files stay on each host. */
  cluster: { name: string; nodes: { name: string; host: string; port: number; clusterPort: number; testRoutePort?: number; routePin?: string }[] };
  maxPayload: number;
  jetstreamMax?: JetStreamMax;
  syncAlways: boolean;
}

/** The base and every tenant record the root holds: the list a node runs is chosen from these (the record, a pending claim). */
export interface NodeMaterial extends NodeBase {
  spaces: MaterialAccount[];
}

/** What a publish (broker/material-bucket.ts) writes from: the base, every tenant record on the control host, and the signer of their held twins. */
export interface MaterialSource {
  base: NodeBase;
  spaces: readonly RenderAccount[];
  /** The account JWT held (limits.conn 0), signed where the operator seed is; called only for keys that change. */
  held: (jwt: string) => string;
}

/** What only the node's own host knows: where its store, log and pid file live, and its route TLS files and password. */
export interface NodeLocal {
  storeDir: string;
  logFile: string;
  pidFile: string;
  routeSecurity: Pick<ClusterBlock, "tls" | "auth">;
}

/** The base of a cluster root, read from its disk (`read`: its settings, when the caller read them already). */
export function nodeBase(layout: RootLayout, guards: Guards = GUARDS_ON, read: ClusterRead = clusterSettingsOf(layout)): NodeBase {
  const { settings, cluster } = read;
  const broker = loadBrokerTrust(layout);
  const authority = loadAuthorityAccount(layout);
  const { render: jetstreamMax } = effectiveBudget(layout, guards);
  // Each certificate's pin is public (a hash of its public key): the nodes refuse any other (docs/cluster.md "A forgotten node stays out").
  const pins = routePins(layout, cluster, guards);
  return {
    format: "cotal.node-material/1",
    operator: { publicKey: broker.operator.publicKey, jwt: broker.operator.jwt },
    system: { publicKey: broker.system.publicKey, jwt: broker.system.jwt },
    authority: { name: authority.name, publicKey: authority.publicKey, jwt: authority.jwt },
    cluster: { name: cluster.name, nodes: cluster.nodes.map((n) => ({ name: n.name, host: nodeHost(n, settings.host), port: n.port, clusterPort: n.clusterPort, ...(n.testRoutePort !== undefined ? { testRoutePort: n.testRoutePort } : {}), ...(pins?.[n.name] ? { routePin: pins[n.name] } : {}) })) },
    maxPayload: maxPayloadOf(layout, settings),
    ...(jetstreamMax ? { jetstreamMax } : {}),
    syncAlways: renderFeatures(layout).syncAlways,
  };
}

/**
 * What the writer publishes from (broker/material-bucket.ts), read from the control host's disk:
 * the base, every tenant record, and the signer of the held twins (the operator seed stays here).
 */
export function materialSource(layout: RootLayout, guards: Guards = GUARDS_ON): MaterialSource {
  const operator = loadBrokerTrust(layout).operator;
  const spaces = accountInventory(layout).spaces.map((s) => ({ name: s.name, publicKey: s.publicKey, jwt: s.jwt }));
  return { base: nodeBase(layout, guards), spaces, held: (jwt) => heldAccountJwt(operator, jwt) };
}

/** The whole material of a cluster root, read from its disk (the control host's, where the seeds are): the held variants are signed here. */
export function nodeMaterial(layout: RootLayout, guards: Guards = GUARDS_ON): NodeMaterial {
  const { base, spaces, held } = materialSource(layout, guards);
  return { ...base, spaces: spaces.map((s) => ({ ...s, heldJwt: held(s.jwt) })) };
}

/** What a writer on this disk renders one node from, its settings read once. */
export function nodeInputs(layout: RootLayout, node: string, guards: Guards = GUARDS_ON): { base: NodeBase; local: NodeLocal } {
  const read = clusterSettingsOf(layout, node);
  return { base: nodeBase(layout, guards, read), local: nodeLocalOf(layout, node, guards, read.cluster) };
}

/** A node's own inputs on the root's disk (on one machine, or the simulated hosts' shared one). */
export function nodeLocalOf(layout: RootLayout, node: string, guards: Guards = GUARDS_ON, cluster: ClusterSettings = clusterSettingsOf(layout, node).cluster): NodeLocal {
  return { storeDir: layout.nodeStoreDir(node), logFile: layout.nodeLogFile(node), pidFile: layout.nodePidFile(node), routeSecurity: nodeRouteSecurity(layout, cluster, node, guards) };
}

/** Pure: the named tenants' accounts from the material, or the refusal naming one it lacks. */
export function materialSpaces(m: NodeMaterial, names: readonly string[]): RenderAccount[] {
  const byName = new Map(m.spaces.map((s) => [s.name, s] as const));
  return names.map((name) => {
    const s = byName.get(name);
    if (!s) throw new CotalError("render-refused", `space ${name} is listed but the node material has no account record for it`, { next: "cotal broker reconcile   # prints the record and both lists" });
    return { name: s.name, publicKey: s.publicKey, jwt: s.jwt };
  });
}

/** Pure: every tenant of the material held, as a node boots before it read the committed record. */
export function materialHeld(m: NodeMaterial): RenderAccount[] {
  return m.spaces.map((s) => ({ name: s.name, publicKey: s.publicKey, jwt: s.heldJwt }));
}

/**
 * Pure: one node's config (docs/cluster.md). `tenants` is the list it runs, or `{ held }` for the boot
 * before it read the committed record: every tenant held, none admitted (broker/node-hold.ts), or no
 * tenant at all (a maintenance config) under CLUSTER_BOOT_BARE or on a root with none yet.
 */
export function renderNodeFrom(base: NodeBase, node: string, tenants: readonly RenderAccount[] | { held: readonly RenderAccount[] }, local: NodeLocal, guards: Guards = GUARDS_ON): { text: string; digest: string } {
  const self = base.cluster.nodes.find((n) => n.name === node);
  if (!self) throw new CotalError("corrupt-record", `the cluster names no node ${node}`, { next: "cotal status" });
  const boot = "held" in tenants;
  const list = boot ? (guards.CLUSTER_BOOT_BARE ? [] : tenants.held) : tenants;
  const pins = base.cluster.nodes.map((n) => n.routePin);
  const tls = local.routeSecurity.tls && pins.every((p) => p !== undefined) ? { ...local.routeSecurity.tls, pinned: pins as string[] } : local.routeSecurity.tls;
  const text = serverConfig({ operator: base.operator, system: base.system }, list, {
    host: self.host,
    port: self.port,
    serverName: self.name,
    storeDir: local.storeDir,
    logFile: local.logFile,
    pidFile: local.pidFile,
    cluster: { name: base.cluster.name, port: self.clusterPort, routes: routesFor({ name: base.cluster.name, replicas: 0, nodes: base.cluster.nodes }, self.host, node), ...(self.testRoutePort !== undefined ? { advertisePort: self.testRoutePort } : {}), ...local.routeSecurity, ...(tls ? { tls } : {}) },
    ...(boot && list.length === 0 ? { maintenance: true } : {}),
    maxPayload: base.maxPayload,
    authority: base.authority,
    syncAlways: base.syncAlways,
    ...(base.jetstreamMax ? { jetstreamMax: base.jetstreamMax } : {}),
  });
  return { text, digest: configDigest(text) };
}

interface ClusterRead {
  settings: NonNullable<ReturnType<typeof loadSettings>>;
  cluster: ClusterSettings;
}

function clusterSettingsOf(layout: RootLayout, node?: string): ClusterRead {
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  if (!settings || !cluster || (node !== undefined && !cluster.nodes.some((n) => n.name === node))) {
    throw new CotalError("corrupt-record", `${layout.settingsFile} names no cluster${node !== undefined ? ` node ${node}` : ""}`, { next: `cotal status --root ${layout.root}` });
  }
  return { settings, cluster };
}
