/**
 * `cotal node add` (docs/cluster.md "Joining: cotal node add"): a node joins a cluster root from the
 * control host. Everything it needs is made here (its place in settings.json, its route certificate,
 * its agent's users); the node is proven like any other before the verb reports it added.
 */
import { existsSync, readdirSync } from "node:fs";
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError, rerunWith } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { freePorts } from "../broker/free-port.js";
import { portBindable } from "../broker/port-check.js";
import { isLocalHost } from "../broker/runtime.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { clusterOf, nextNodeName, nodeHost, portsTakenOn, validNodeHost, CLUSTER_MAX, type ClusterNodeSettings, type ClusterSettings } from "../root/cluster-settings.js";
import { addNodeCertificate, routeAuthFile, type RouteTls } from "../root/route-security.js";
import { certainInventory } from "../root/account-store.js";
import { ensureAgentCreds, agentCredsFiles } from "../root/agent-creds.js";
import { loadSettings, saveSettings, type RootSettings } from "../root/settings.js";
import type { RootLayout } from "../root/layout.js";
import { withVerb } from "../verb/verb.js";
import { bootCluster, pinNewcomers } from "./boot-cluster.js";
import { finishedByUp, liveNodesOrRefuse, publishMaterialNow, startClusterNodes } from "./cluster-nodes.js";
import { readRuntime } from "../broker/runtime.js";
import type { UpResult } from "./boot-root.js";

export interface NodeAddOptions {
  root: string;
  /** The guards the entry handed in (docs/ablation.md). */
  guards?: Guards;
  /** The node's host: where it listens and the others dial it. Default: the root's host (this machine). */
  host?: string;
  /** Its client port. Default: a free port on this host; on another host, node 1's port when no node there holds it. */
  port?: number;
  /** Its route port. Default as for `port`, from node 1's route port. */
  clusterPort?: number;
  /** With the operator's route certificates (`routeTls.source: "files"`): the new node's certificate and key, absolute paths. */
  certFile?: string;
  keyFile?: string;
  onProgress?: (m: string) => void;
}

export interface NodeAddResult {
  root: string;
  node: { name: string; host: string; port: number; clusterPort: number; url: string };
  /** Whether this host started it and proved the committed record on every node (a local node); else its host's agent starts it. */
  started: boolean;
  /** The files the node's host needs, besides settings.json (docs/cluster.md "Joining: cotal node add"). */
  files: string[];
  /** What to run next, in order, as printed (a node on another host). */
  next: string[];
  /** The cluster `up` this host ran (a local node). */
  up?: UpResult;
  /** What did not happen and will later (a node material publish that failed). */
  notes?: string[];
}

/** What the new node is, checked against the root before anything is written. */
interface Planned {
  settings: RootSettings;
  cluster: ClusterSettings;
  node: ClusterNodeSettings;
  local: boolean;
}

/**
 * Adds a node: validate, then its route certificate and agent users, then settings.json (the add's
 * point of no return: a crash before it leaves unused files only). A node on this host is then started
 * held and the committed record applied to every node, proven, exactly as `cotal up` does; a node
 * elsewhere is started by its host's agent, and `cotal up` on this host proves it.
 */
export async function nodeAdd(opts: NodeAddOptions): Promise<NodeAddResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const root = canonicalRoot(opts.root);
  return withVerb({ root, guards, purpose: "cotal node add", journal: { verb: "up cluster" }, certain: false }, async (v) => {
    if (v.journal) throw new CotalError("journal-blocked", `a ${v.journal.op} entry stands in the maintenance journal; a node joins a settled cluster`, { next: `cotal --root ${shellWord(root)} up --detach   # finishes it; then: ${rerunWith({})}` });
    const plan = await planNode(v.layout, opts, guards);
    const files = await makeNodeFiles(v.layout, plan, opts, guards);
    saveSettings(v.layout, plan.settings);
    const { node } = plan;
    const host = nodeHost(node, plan.settings.host);
    const out = { root, node: { name: node.name, host, port: node.port, clusterPort: node.clusterPort, url: `nats://${host}:${node.port}` }, files };
    const r = shellWord(root);
    if (!plan.local) {
      // The running nodes pin its certificate now, so it routes as soon as its host starts it (the up below does it otherwise);
      // that reload also publishes the node material its agent renders its held boot from, which is published here only without it.
      const pinned = await pinNewcomers(v.layout, plan.cluster, guards, (m) => opts.onProgress?.(m)).then((applied) => ({ applied }), (e: unknown) => ({ applied: false, why: (e as Error).message }));
      const unpinned = "why" in pinned ? pinned.why : undefined;
      if (unpinned) opts.onProgress?.(`the running nodes could not pin it yet (${unpinned}); the up below does it before it waits for the node`);
      const failed = pinned.applied ? undefined : await publishMaterialNow(v.layout, nodeUrls(v.layout, plan), plan.cluster, guards);
      if (failed) opts.onProgress?.(`the node material could not be published yet (${failed}); the up below publishes it before it waits for the node`);
      const notes = [...(failed ? [`node material not published: ${failed}`] : []), ...(unpinned ? [`not yet pinned by the running nodes: ${unpinned}`] : [])];
      return { ...out, started: false, ...(notes.length > 0 ? { notes } : {}), next: [`cotal --root ${r} node run --node ${node.name}   # on ${host}, with the files above copied there`, `cotal --root ${r} up --detach   # here, once it runs: proves the committed record on every node`] };
    }
    if (guards.NODE_ADD_UNPROVEN) return { ...out, ...(await startUnproven(v.layout, plan, guards)) };
    opts.onProgress?.(`added node ${node.name} (${host}:${node.port}, routes ${node.clusterPort}); starting it with every tenant held and proving the committed record on every node`);
    const up = await bootCluster({ layout: v.layout, lock: v.lock, guards }, { detach: true, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) }).catch((e: unknown) => {
      throw finishedByUp(e, root, `node ${node.name}`);
    });
    return { ...out, started: true, next: [], up };
  });
}

/** The new node in settings (pure but for the port probes on this host), or a refusal that changed nothing. */
async function planNode(layout: RootLayout, opts: NodeAddOptions, guards: Guards): Promise<Planned> {
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  const r = shellWord(layout.root);
  if (!settings || !cluster) throw new CotalError("invalid-argument", `${layout.root} is not a cluster root; a node joins a root made with cotal up --cluster`, { next: `cotal --root ${r} status` });
  if (cluster.nodes.length >= CLUSTER_MAX) throw new CotalError("invalid-argument", `${layout.root} has ${cluster.nodes.length} nodes, the most a cluster root takes (${CLUSTER_MAX})`, { next: `cotal --root ${r} status` });
  const host = opts.host ?? settings.host;
  if (!validNodeHost(host)) throw new CotalError("invalid-argument", `--host ${JSON.stringify(host)} is not an IPv4 address or a DNS name`, { next: rerunWith({ "--host": settings.host }) });
  const local = isLocalHost(host);
  const taken = portsTakenOn(cluster, host, settings.host);
  const [port, clusterPort] = await portsFor(cluster, settings, host, local, taken, opts);
  for (const [flag, p] of [["--port", port], ["--cluster-port", clusterPort]] as const) {
    if (taken.has(p) || port === clusterPort) throw new CotalError("invalid-argument", `${flag} ${p} is taken on ${host} by a node of this cluster`, { next: rerunWith({ [flag]: null }) });
    if (local && !guards.UP_SKIP_PORT_CHECK && !(await portBindable(host, p))) throw new CotalError("invalid-argument", `${flag} ${p} is in use on ${host}`, { next: rerunWith({ [flag]: null }) });
  }
  const name = nextNodeName(cluster, existsSync(layout.nodesDir) ? readdirSync(layout.nodesDir) : []);
  const node: ClusterNodeSettings = { name, port, clusterPort, ...(opts.host !== undefined && opts.host !== settings.host ? { host } : {}) };
  const routeTls = withNodeTls(cluster.routeTls, name, opts);
  const next: ClusterSettings = { ...cluster, nodes: [...cluster.nodes, node], ...(routeTls ? { routeTls } : {}) };
  const planned = { ...settings, cluster: next };
  clusterOf(layout, planned); // the same check every later read makes: a settings.json it would refuse is never written
  return { settings: planned, cluster: next, node, local };
}

/** The client URLs of the nodes there were before this one: as this host recorded them, else from settings. */
function nodeUrls(layout: RootLayout, plan: Planned): string[] {
  const recorded = new Map((readRuntime(layout)?.nodes ?? []).map((n) => [n.name, n.url]));
  return plan.cluster.nodes.filter((n) => n.name !== plan.node.name).map((n) => recorded.get(n.name) ?? `nats://${nodeHost(n, plan.settings.host)}:${n.port}`);
}

/** The ports given, else free ones here (this host), else node 1's (another host, "4222 on every host"). */
async function portsFor(cluster: ClusterSettings, settings: RootSettings, host: string, local: boolean, taken: Set<number>, opts: NodeAddOptions): Promise<[number, number]> {
  for (const [flag, p] of [["--port", opts.port], ["--cluster-port", opts.clusterPort]] as const) {
    if (p !== undefined && (!Number.isInteger(p) || p < 1 || p > 65535)) throw new CotalError("invalid-argument", `${flag} ${p} is not a port (1-65535)`, { next: rerunWith({ [flag]: null }) });
  }
  const first = cluster.nodes[0] as ClusterNodeSettings;
  const free = local ? (await freePorts(4, host)).filter((p) => !taken.has(p)) : [first.port, first.clusterPort];
  const port = opts.port ?? (free.find((p) => p !== opts.clusterPort) as number);
  const clusterPort = opts.clusterPort ?? (free.find((p) => p !== port) as number);
  if (!local && (opts.port === undefined || opts.clusterPort === undefined) && (taken.has(port) || taken.has(clusterPort))) {
    throw new CotalError("invalid-argument", `a node of this cluster already listens on ${host}; name the new node's ports`, { next: rerunWith({ "--port": String(settings.port + 1000), "--cluster-port": String(first.clusterPort + 1000) }) });
  }
  return [port, clusterPort];
}

/** settings' routeTls with the new node's files: cotal's CA names none per node; the operator's needs both flags. */
function withNodeTls(tls: RouteTls | undefined, name: string, opts: NodeAddOptions): RouteTls | undefined {
  const given = opts.certFile !== undefined || opts.keyFile !== undefined;
  if (tls?.source !== "files") {
    if (given) throw new CotalError("invalid-argument", "--cert-file and --key-file name the operator's route certificates; this root's routes use cotal's own CA, which signs the new node's", { next: rerunWith({ "--cert-file": null, "--key-file": null }) });
    return tls;
  }
  if (opts.certFile === undefined || opts.keyFile === undefined || !existsSync(opts.certFile) || !existsSync(opts.keyFile)) {
    throw new CotalError("invalid-argument", "this root's routes use the operator's certificates (settings.json routeTls.source \"files\"): give the new node's with --cert-file and --key-file (absolute paths of existing files)", { next: "cotal node add --help" });
  }
  return { ...tls, nodes: { ...tls.nodes, [name]: { certFile: opts.certFile, keyFile: opts.keyFile } } };
}

/** Its route certificate (cotal's CA) and its agent's users: what the node's host holds, and never a seed of the root. */
async function makeNodeFiles(layout: RootLayout, plan: Planned, opts: NodeAddOptions, guards: Guards): Promise<string[]> {
  const host = nodeHost(plan.node, plan.settings.host);
  const files: string[] = [];
  if (plan.cluster.routeTls?.source === "cotal") {
    const tls = await addNodeCertificate(layout, plan.node.name, host);
    files.push(tls.caFile, tls.certFile, tls.keyFile);
  } else if (plan.cluster.routeTls?.source === "files") {
    files.push(plan.cluster.routeTls.caFile, opts.certFile as string, opts.keyFile as string);
  }
  if (plan.cluster.routeAuth) files.push(routeAuthFile(layout));
  ensureAgentCreds(layout, plan.node.name, guards);
  const creds = agentCredsFiles(layout, plan.node.name);
  return [layout.settingsFile, ...files, creds.authority, creds.system];
}

/**
 * Ablation only (docs/ablation.md NODE_ADD_UNPROVEN): the new node started at once with the list on
 * disk, outside the saga; neither it nor the others' new routes are proven or recorded.
 */
async function startUnproven(layout: RootLayout, plan: Planned, guards: Guards): Promise<{ started: boolean; next: string[] }> {
  const { prior, alive } = liveNodesOrRefuse(layout, guards);
  await startClusterNodes(layout, plan.settings, plan.cluster, [plan.node], { list: certainInventory(layout, guards), maintenance: false, alive, prior, guards });
  return { started: true, next: [] };
}
