/**
 * `cotal node forget` (docs/cluster.md "Leaving: cotal node forget"): a node that is gone for good
 * leaves the cluster root. JetStream forgets its peer first, then settings.json drops it, then the
 * committed record is applied to the nodes that remain and proven there, so their routes no longer
 * name it and no later change waits for its proof.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError, RERUN } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { sendsInfo, INFO_PROBE_MS } from "../broker/info-probe.js";
import { readRuntime } from "../broker/runtime.js";
import { SystemClient } from "../broker/system-client.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { clusterOf, nodeHost, CLUSTER_MIN, type ClusterSettings } from "../root/cluster-settings.js";
import { loadSettings, saveSettings, type RootSettings } from "../root/settings.js";
import type { RootLayout } from "../root/layout.js";
import { routePins, type RouteTls } from "../root/route-security.js";
import { mintSystemUserCreds } from "../trust/index.js";
import { revokeAgentAuthority, revokeAgentSystem } from "../root/agent-creds.js";
import { withVerb } from "../verb/verb.js";
import { bootCluster } from "./boot-cluster.js";
import { finishedByUp } from "./cluster-nodes.js";
import type { UpResult } from "./boot-root.js";

export interface NodeForgetOptions {
  root: string;
  /** The guards the entry handed in (docs/ablation.md). */
  guards?: Guards;
  /** The node to forget, as `cotal status` names it. */
  node: string;
  onProgress?: (m: string) => void;
}

export interface NodeForgetResult {
  root: string;
  node: string;
  /** What JetStream's meta group said: "removed", or "not a member" (the node never joined, or was removed before). */
  peer: "removed" | "not a member";
  /** The public key of its agent's authority user, revoked in the authority account by this run. */
  revoked?: string;
  /** The public key of its agent's system user, revoked in the system account by this run. */
  revokedSystem?: string;
  /** Whether the nodes that remain pin their route certificates, so the forgotten node's is refused (docs/cluster.md "A forgotten node stays out"). */
  routesPinned: boolean;
  /** The nodes that remain, each proven on the committed record (the cluster `up` this verb ran). */
  up: UpResult;
}

const PEER_REMOVE_MS = 10_000;

/** Forgets one node: refused while it answers, or when too few would remain; never half-done (docs/cluster.md). */
export async function nodeForget(opts: NodeForgetOptions): Promise<NodeForgetResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const root = canonicalRoot(opts.root);
  return withVerb({ root, guards, purpose: "cotal node forget", journal: { verb: "up cluster" }, certain: false }, async (v) => {
    const r = shellWord(root);
    if (v.journal) throw new CotalError("journal-blocked", `a ${v.journal.op} entry stands in the maintenance journal; a node leaves a settled cluster`, { next: `cotal --root ${r} up --detach && ${RERUN}` });
    const { settings, cluster } = forgettable(v.layout, opts.node);
    const gone = cluster.nodes.find((n) => n.name === opts.node) as ClusterSettings["nodes"][number];
    const host = nodeHost(gone, settings.host);
    if (await sendsInfo(gone.port, host, INFO_PROBE_MS)) {
      throw new CotalError("live-process", `node ${opts.node} still answers at nats://${host}:${gone.port}; forget is for a node that is gone for good, and nothing was changed`, {
        next: `cotal --root ${r} status   # stop node ${opts.node} on ${host} first (its agent, then its nats-server), then: cotal --root ${r} node forget ${opts.node}`,
      });
    }
    // JetStream first: a crash after it leaves the node in settings.json, and a re-run finds it "not a member".
    const peer = await removePeer(v.layout, settings, cluster, opts.node);
    opts.onProgress?.(`JetStream's meta group: peer ${opts.node} ${peer}`);
    // Its agent's authority user, before settings.json forgets whose it was; live once the nodes run the re-signed account.
    const revoked = guards.FORGET_KEEPS_AGENT_USER ? undefined : revokeAgentAuthority(v.layout, opts.node);
    if (revoked) opts.onProgress?.(`revoked node ${opts.node}'s agent authority user ${revoked}`);
    const revokedSystem = guards.FORGET_KEEPS_AGENT_USER ? undefined : revokeAgentSystem(v.layout, opts.node);
    if (revokedSystem) opts.onProgress?.(`revoked node ${opts.node}'s agent system user ${revokedSystem}`);
    const after = withoutNode(settings, cluster, opts.node);
    saveSettings(v.layout, after);
    opts.onProgress?.(`forgot node ${opts.node} in settings.json; applying the committed record to the ${cluster.nodes.length - 1} nodes that remain`);
    const up = await bootCluster({ layout: v.layout, lock: v.lock, guards }, { detach: true, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) }).catch((e: unknown) => {
      throw finishedByUp(e, root, `the forgetting of node ${opts.node}`);
    });
    const routesPinned = routePins(v.layout, after.cluster as ClusterSettings, guards) !== undefined;
    if (!routesPinned && cluster.routeTls) opts.onProgress?.(`the routes pin no certificate (an operator's certificate is not readable here): node ${opts.node}'s certificate is refused only once your CA stops trusting it`);
    return { root, node: opts.node, peer, ...(revoked ? { revoked } : {}), ...(revokedSystem ? { revokedSystem } : {}), routesPinned, up };
  });
}

/** The root's settings and cluster when `node` may be forgotten; a refusal that changed nothing otherwise. */
function forgettable(layout: RootLayout, node: string): { settings: RootSettings; cluster: ClusterSettings } {
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  const r = shellWord(layout.root);
  if (!settings || !cluster) throw new CotalError("invalid-argument", `${layout.root} is not a cluster root`, { next: `cotal --root ${r} status` });
  if (!cluster.nodes.some((n) => n.name === node)) {
    throw new CotalError("invalid-argument", `${layout.root} has no node ${JSON.stringify(node)} (its nodes: ${cluster.nodes.map((n) => n.name).join(", ")})`, { next: `cotal --root ${r} status` });
  }
  const left = cluster.nodes.length - 1;
  if (left < CLUSTER_MIN || left < cluster.replicas) {
    throw new CotalError("invalid-argument", `forgetting ${node} would leave ${left} nodes; the cluster's R${cluster.replicas} buckets need ${Math.max(CLUSTER_MIN, cluster.replicas)}: add the node that takes its place first`, {
      next: `cotal --root ${r} node add && cotal --root ${r} node forget ${node}`,
    });
  }
  return { settings, cluster };
}

/** `$JS.API.SERVER.REMOVE` through the first remaining node that answers, as a system user that may ask nothing else. */
async function removePeer(layout: RootLayout, settings: RootSettings, cluster: ClusterSettings, node: string): Promise<"removed" | "not a member"> {
  const creds = mintSystemUserCreds(loadBrokerTrust(layout).system, { name: "cotal-node-forget", allowPub: ["$JS.API.SERVER.REMOVE"], allowSub: ["_INBOX.>"], expiresInSeconds: 120 }).creds;
  const recorded = new Map((readRuntime(layout)?.nodes ?? []).map((n) => [n.name, n.url]));
  const urls = cluster.nodes.filter((n) => n.name !== node).map((n) => recorded.get(n.name) ?? `nats://${nodeHost(n, settings.host)}:${n.port}`);
  let last: unknown;
  for (const url of urls) {
    let c: SystemClient | undefined;
    try {
      c = await SystemClient.connect(url, { creds }, { timeoutMs: 3_000 });
      return await c.removePeer(node, PEER_REMOVE_MS);
    } catch (err) {
      if (err instanceof CotalError && err.code === "cluster-unproven") throw err;
      last = err;
    } finally {
      await c?.close();
    }
  }
  throw new CotalError("broker-unreachable", `no remaining node answered the peer removal of ${node} (${(last as Error | undefined)?.message ?? "none tried"}); nothing was changed`, {
    next: `cotal --root ${shellWord(layout.root)} up --detach && ${RERUN}`,
  });
}

/** Pure: settings without `node` (and its entry among the operator's route certificates). */
export function withoutNode(settings: RootSettings, cluster: ClusterSettings, node: string): RootSettings {
  const tls: RouteTls | undefined = cluster.routeTls?.source === "files" ? { ...cluster.routeTls, nodes: Object.fromEntries(Object.entries(cluster.routeTls.nodes).filter(([n]) => n !== node)) } : cluster.routeTls;
  return { ...settings, cluster: { ...cluster, nodes: cluster.nodes.filter((n) => n.name !== node), ...(tls ? { routeTls: tls } : {}) } };
}
