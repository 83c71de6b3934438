import { type Guards } from "../guards.js";
import { existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { RERUN, CotalError } from "../errors.js";
import { waitForMetaLeader } from "../broker/cluster-process.js";
import { freePorts } from "../broker/free-port.js";
import { isLocalNode, nodeAlive, readRuntime, withUnrecordedNodes, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import type { AuthorityStore, VersionedRecord } from "../inventory/authority-store.js";
import { diffLists, seedRecord, type InventoryRecord, type NodeProof } from "../inventory/record.js";
import { type ProvisionResult } from "../provision/provision-space.js";
import { CLUSTER_REJOIN_MS, provisionSpaces } from "../provision/provision-batch.js";
import { settleProvisioning } from "../provision/owed.js";
import { accountInventory, certainInventory } from "../root/account-store.js";
import { clusterOf, newClusterSettings, nodeHost, tenantReplicasOf, validNodeHost, CLUSTER_MAX, CLUSTER_MIN, type ClusterNodeSettings, type ClusterSettings } from "../root/cluster-settings.js";
import { createRootTrust } from "../root/create-root.js";
import { createRouteSecurity } from "../root/route-security.js";
import type { RootLayout } from "../root/layout.js";
import { DEFAULT_HOST, DEFAULT_PORT, loadSettings, saveSettings, type RootSettings } from "../root/settings.js";
import { applyConfig, writeUnservedConfig } from "../saga/apply.js";
import { clusterReloader } from "../saga/cluster-reloader.js";
import { digestOfServerConf } from "../saga/digest.js";
import { executeResume } from "../saga/resume-executor.js";
import { acquireLeaseWaiting } from "../saga/lease-holder.js";
import { LeaseKeeper } from "../saga/lease-keeper.js";
import { renderList } from "../saga/render-list.js";
import { seedInventory } from "../saga/seed.js";
import type { ReloadVerdict } from "../saga/reload.js";
import { liftNotes, type BootContext, type BootOptions, type UpResult } from "./boot-root.js";
import { liftStandingQuiesces } from "../backup/quiesce.js";
import { proofKey } from "../inventory/node-proofs.js";
import { connectReplicated, liveNodesOrRefuse, pastBucketElection, publishMaterialNow, startClusterNodes } from "./cluster-nodes.js";
import { ensureAgentCreds } from "../root/agent-creds.js";
import { INFO_PROBE_MS, sendsInfo, silentElsewhere } from "../broker/info-probe.js";
import { ensureUserCreds } from "./creds.js";
import { leaseKeyFor } from "../verb/session.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { stopProcess } from "../broker/stop-process.js";
import { clearDownNodes } from "../broker/stop-intent.js";
import { shellWord } from "../error-shape.js";
import { checkNodeStreams, describeChecks, describeProblems, served, tenantAccounts, waitStreamsServed } from "./node-streams.js";

/** `cotal up --cluster N`'s own options, validated by `up` before the lock. */
export interface ClusterBootOptions extends BootOptions {
  /** The node count of a new cluster root; on an existing one it must match (or be absent). */
  cluster?: number;
  /** Replicas of every tenant's streams and buckets (1 or 3), fixed when the cluster root is made. */
  tenantReplicas?: number;
  /** A journaled `space rm` still standing (up.ts): that space's record may outlive its listing, so it is no divergence. */
  removing?: string;
  /**
   * A new cluster root only: each node's host (its listen address, where the others dial it), one per
   * node in order. Absent: every node on `host` (127.0.0.1). A node whose host is not this machine's is
   * started by `cotal node run` on its own host (docs/cluster.md "A cluster across hosts").
   */
  nodeHosts?: readonly string[];
}

/** Validates `--node-hosts` against the cluster size before anything is written. */
export function validNodeHosts(hosts: readonly string[] | undefined, size: number | undefined): readonly string[] | undefined {
  if (hosts === undefined) return undefined;
  const next = `cotal up --cluster ${size ?? 3} --node-hosts 10.0.0.1,10.0.0.2,10.0.0.3 --detach`;
  if (size === undefined) throw new CotalError("invalid-argument", "--node-hosts applies only to a new cluster root (with --cluster N): a root's hosts are fixed at creation", { next });
  if (hosts.length !== size) throw new CotalError("invalid-argument", `--node-hosts names ${hosts.length} host${hosts.length === 1 ? "" : "s"} for a ${size}-node cluster: one per node, in order`, { next });
  const bad = hosts.find((h) => !validNodeHost(h));
  if (bad !== undefined) throw new CotalError("invalid-argument", `invalid node host ${JSON.stringify(bad)}: expected an IPv4 address or a lower-case DNS name`, { next });
  return hosts;
}

/** Validates `--cluster N` before anything is written (docs/cluster.md). */
export function validClusterSize(n: number | undefined, detach: boolean, singleSpace: boolean | undefined): number | undefined {
  if (n === undefined) return undefined;
  if (!Number.isInteger(n) || n < CLUSTER_MIN || n > CLUSTER_MAX) {
    throw new CotalError("invalid-argument", `invalid cluster size ${n}: expected ${CLUSTER_MIN}-${CLUSTER_MAX} nodes`, { next: "cotal up --cluster 3 --detach" });
  }
  if (!detach) throw new CotalError("invalid-argument", "a cluster runs its nodes in the background: add --detach", { next: `cotal up --cluster ${n} --detach` });
  if (singleSpace) throw new CotalError("invalid-argument", "a cluster root needs the system signing seed (each node is proven through it): drop --single-space", { next: `cotal up --cluster ${n} --detach` });
  return n;
}



/** The node count of a cluster root, or undefined on a single-broker (or not yet made) root. */
export function clusterSizeOf(layout: RootLayout): number | undefined {
  return clusterOf(layout, loadSettings(layout))?.nodes.length;
}

/** Pure: the proofs of `members` only. */
export function onlyMembers(nodes: Record<string, NodeProof>, members: readonly string[]): Record<string, NodeProof> {
  return Object.fromEntries(Object.entries(nodes).filter(([n]) => members.includes(n)));
}

/** The proofs a cluster reload returned, stamped with the generation they prove. */
function stamped(verdict: ReloadVerdict, generation: number): Record<string, NodeProof> {
  const nodes = verdict.outcome === "reloaded" ? (verdict.nodes ?? {}) : {};
  return Object.fromEntries(Object.entries(nodes).map(([name, p]) => [name, { ...p, appliedGeneration: generation }]));
}

/** A new cluster root: settings with every node's ports (node 1 on --port), then the trust. */
async function createClusterRoot(layout: RootLayout, size: number, opts: ClusterBootOptions): Promise<void> {
  const inv = accountInventory(layout);
  if (inv.spaces.length > 0 || inv.corrupt.length > 0 || existsSync(layout.authDir)) {
    throw new CotalError("missing-broker-trust", `${layout.root} holds account records but no broker trust (${layout.brokerFile})`, {
      next: `restore ${layout.brokerFile} and ${layout.brokerSecretsDir} from a backup; minting a new operator would orphan every tenant`,
    });
  }
  const host = opts.host ?? DEFAULT_HOST;
  const first = opts.port ?? DEFAULT_PORT;
  const free = (await freePorts(2 * size, host)).filter((p) => p !== first).slice(0, 2 * size - 1);
  const serverName = `cotal-${randomBytes(4).toString("hex")}`;
  const cluster = newClusterSettings(serverName, [first, ...free.slice(0, size - 1)], free.slice(size - 1), opts.nodeHosts);
  // Every new cluster root routes over mutual TLS with route auth (docs/cluster.md "Route TLS and auth").
  const security = await createRouteSecurity(layout, cluster, (name) => nodeHost(cluster.nodes.find((n) => n.name === name) ?? {}, host));
  const settings: RootSettings = {
    format: "cotal.settings/1",
    host,
    port: first,
    serverName,
    createdAt: new Date().toISOString(),
    cluster: { ...cluster, ...(opts.tenantReplicas !== undefined ? { tenantReplicas: opts.tenantReplicas } : {}), ...security },
  };
  saveSettings(layout, settings);
  createRootTrust(layout, opts.space ?? "default", { multiSpace: true });
}

/**
 * `cotal up` on a cluster root (docs/cluster.md): restart a running node whose tenant streams run
 * outside their assignment, start every node that is not running — a new root's with its first list,
 * any other with every tenant held (invariant 3) — wait for the routes and a JetStream meta leader,
 * then, holding the writer lease, seed or resume the R3 record and apply the committed list to every
 * node (fence, rename, reload, prove from that node), recording each node's proof, and wait until
 * every node serves every tenant stream it lists. Only then are tenants provisioned.
 */
export async function bootCluster({ layout, lock, guards }: BootContext, opts: ClusterBootOptions): Promise<UpResult> {
  const progress = opts.onProgress ?? (() => undefined);
  let created = false;
  if (!existsSync(layout.brokerFile)) {
    if (opts.cluster === undefined) throw new CotalError("invalid-argument", "not a cluster root", { next: "cotal up" });
    validNodeHosts(opts.nodeHosts, opts.cluster);
    progress(`creating cluster root ${layout.root} (${opts.cluster} nodes)`);
    await createClusterRoot(layout, opts.cluster, opts);
    created = true;
  }
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  if (!settings || !cluster) {
    throw new CotalError("invalid-argument", `${layout.root} is a single-broker root; --cluster applies only to a new root`, { next: "cotal up --root <new dir> --cluster 3 --detach" });
  }
  if (!created && opts.nodeHosts !== undefined) validNodeHosts(opts.nodeHosts, undefined);
  if (opts.cluster !== undefined && opts.cluster !== cluster.nodes.length) {
    throw new CotalError("invalid-argument", `${layout.root} is a ${cluster.nodes.length}-node cluster, not ${opts.cluster}; cotal node add and cotal node forget change its nodes`, { next: `cotal up --root ${layout.root} --detach` });
  }
  if (!created && opts.tenantReplicas !== undefined && opts.tenantReplicas !== tenantReplicasOf(cluster)) {
    throw new CotalError("invalid-argument", `${layout.root}'s tenant streams are R${tenantReplicasOf(cluster)}, fixed at creation, not R${opts.tenantReplicas}`, { next: `cotal up --root ${layout.root} --detach` });
  }
  if (!created && ((opts.port !== undefined && opts.port !== settings.port) || (opts.host !== undefined && opts.host !== settings.host))) {
    throw new CotalError("invalid-argument", "a cluster root's listeners are fixed at creation (every node's routes name them)", { next: `cotal up --root ${layout.root} --detach` });
  }

  // Each node's agent users, which its host holds instead of the root's account seeds (docs/cluster.md "The agent's own users").
  for (const n of cluster.nodes) if (ensureAgentCreds(layout, n.name, guards)) progress(`minted node ${n.name}'s agent users: ${layout.nodeAgentCredsDir(n.name)}`);
  const notes: string[] = created ? [] : await restartUnserving(layout, progress, guards);
  if (!created) await pinNewcomers(layout, cluster, guards, (m) => (notes.push(m), progress(m)));
  const nodes = await ensureNodes(layout, settings, cluster, created, progress, guards);
  const recorded = readRuntime(layout) as BrokerRuntime;
  // Every node, the ones this host did not record included (found above by their answer), is waited for and applied.
  const runtime = guards.UNRECORDED_NODES_IGNORED ? recorded : withUnrecordedNodes(layout, recorded);
  const every = runtime.nodes ?? nodes;
  progress(`waiting for the cluster's JetStream meta leader (${every.length} nodes)`);
  await waitForMetaLeader(layout, every);
  const record = await applyClusterRecord(layout, runtime, cluster, guards, (m) => (notes.push(m), progress(m)), opts.removing);
  await untilStreamsServed(layout, every, record.spaces, runtime.serverVersion, progress);
  // A stopped online backup or restore resumes to lifted, through the saga on every node, as on one broker.
  notes.push(...liftNotes(await liftStandingQuiesces(layout, lock, { guards })));
  if (opts.removing) notes.push(`the removal of space ${opts.removing} is unfinished: cotal space rm ${opts.removing} --yes   # finishes it on every node`);

  // A space being removed is never provisioned again: its streams are already (being) deleted.
  const listed = new Set(record.spaces);
  const inv = certainInventory(layout, guards).filter((s) => listed.has(s.name) && s.name !== opts.removing);
  const broker = loadBrokerTrust(layout);
  // Right after a node returns the meta group may still be electing or catching it up, and every
  // JetStream call times out: provisioning keeps re-trying for a bounded while.
  const provisioned: ProvisionResult[] = await provisionSpaces(layout, broker, runtime, inv, { onProvision: opts.onProvision, replicas: tenantReplicasOf(cluster), retryForMs: CLUSTER_REJOIN_MS, guards });
  settleProvisioning(layout);
  const names = record.spaces;
  const space = opts.space ?? (names.includes("default") ? "default" : names[0]) ?? "default";
  const account = inv.find((s) => s.name === space);
  if (!account) throw new CotalError("space-not-found", `space ${space} does not exist on ${layout.root} (it holds: ${names.join(", ")})`, { next: "cotal space list" });
  return {
    root: layout.root,
    created,
    alreadyRunning: false,
    url: runtime.url,
    pid: runtime.owner.pid,
    space,
    spaces: names,
    credsFile: ensureUserCreds(layout, account, "admin"),
    multiSpace: true,
    provisioned,
    serverVersion: runtime.serverVersion,
    notes,
    nodes: nodes.map((n) => ({ name: n.name, pid: n.owner.pid, url: n.url, port: n.port, clusterPort: n.clusterPort })),
  };
}

/**
 * A node of settings.json the committed record does not count among its members (one added since)
 * routes only once the running nodes pin its certificate: the committed record is applied to them
 * first, so their configs name it (docs/cluster.md "A forgotten node stays out"). No-op when every
 * node is a member, none of this host's runs, or the record cannot be read yet (the boot then says why).
 * Returns whether it applied (and so, through the cluster reload, published the node material).
 */
export async function pinNewcomers(layout: RootLayout, cluster: ClusterSettings, guards: Guards, onNotice: (m: string) => void): Promise<boolean> {
  const recorded = readRuntime(layout);
  if (!recorded?.nodes) return false;
  const every = withUnrecordedNodes(layout, recorded).nodes ?? [];
  const answering = (await Promise.all(every.map(async (n) => ((await sendsInfo(n.port, new URL(n.url).hostname, INFO_PROBE_MS)) ? n : undefined)))).filter((n): n is NodeRuntime => n !== undefined);
  if (answering.length === 0) return false;
  const newcomers = await nonMembers(layout, answering, cluster, guards);
  const running = answering.filter((n) => !newcomers.includes(n.name));
  if (newcomers.length === 0 || running.length === 0) return false;
  onNotice(`pinning node${newcomers.length > 1 ? "s" : ""} ${newcomers.join(", ")} on the running nodes (${running.map((n) => n.name).join(", ")}) before it joins`);
  await applyClusterRecord(layout, { ...recorded, url: (running[0] as NodeRuntime).url, nodes: running }, cluster, guards, onNotice);
  return true;
}

/** The nodes of settings.json the committed record does not list as members; none when it cannot be read within a few seconds. */
async function nonMembers(layout: RootLayout, running: readonly NodeRuntime[], cluster: ClusterSettings, guards: Guards): Promise<string[]> {
  let store: AuthorityStore | undefined;
  try {
    store = await connectReplicated(running.map((n) => n.url), layout, cluster.replicas, guards, { timeoutMs: 3_000 });
    const members = (await store.read())?.record.members;
    return members ? cluster.nodes.map((n) => n.name).filter((n) => !members.includes(n)) : [];
  } catch {
    return [];
  } finally {
    await store?.close().catch(() => undefined);
  }
}

/**
 * Starts every node that does not run, recording all of them in run/broker.json before the wait.
 * A new root's nodes boot its first list (there is no record yet, so nothing can be removed);
 * every other start holds every tenant (none admitted) until the committed record is applied.
 */
async function ensureNodes(layout: RootLayout, settings: RootSettings, cluster: ClusterSettings, created: boolean, progress: (m: string) => void, guards: Guards): Promise<NodeRuntime[]> {
  const { prior, alive } = liveNodesOrRefuse(layout, guards);
  // `up` undoes `down`: the agents of this host's nodes may start them again (broker/stop-intent.ts).
  clearDownNodes(layout);
  // A node on another host is its own `cotal node run`'s to start: `up` starts only the local ones,
  // and counts one elsewhere as running only if it answers (docs/cluster.md "Liveness by reachability").
  const silent = new Set((await silentElsewhere([...alive.values()], settings.host)).map((n) => n.name));
  // A node on another host that this host never recorded counts as running when it answers at its
  // settings' address (docs/cluster.md "Finding the nodes").
  const found = await answeringUnrecorded(layout, cluster, alive, settings.host, guards);
  const down = cluster.nodes.filter((n) => (!alive.has(n.name) && !found.has(n.name)) || silent.has(n.name));
  const toStart = down.filter((n) => isLocalNode(n, settings.host));
  const firstList = created ? certainInventory(layout, guards) : [];
  if (created) writeUnservedConfig(layout.serverConf, renderList(layout, firstList.map((s) => s.name), guards).text);
  if (toStart.length > 0) progress(`starting ${toStart.length === cluster.nodes.length ? "every node" : `node${toStart.length > 1 ? "s" : ""} ${toStart.map((n) => n.name).join(", ")}`}${created ? "" : " with every tenant held (none admitted)"}`);
  const nodes = await startClusterNodes(layout, settings, cluster, toStart, { list: firstList, maintenance: !created, alive, prior, guards });
  const remote = down.filter((n) => !toStart.includes(n));
  if (remote.length > 0) {
    // A node that joined since the last reload renders its held boot from the public bucket: publish it first (docs/cluster.md "Joining").
    const running = cluster.nodes.filter((n) => !down.includes(n)).map((n) => alive.get(n.name)?.url ?? `nats://${nodeHost(n, settings.host)}:${n.port}`);
    if (!created && running.length > 0) {
      const failed = await publishMaterialNow(layout, running, cluster, guards);
      if (failed) progress(`could not publish the node material before waiting for the other hosts: ${failed}`);
    }
    refuseRemoteDown(layout, settings.host, remote);
  }
  return nodes;
}

/** The nodes of settings.json on another host that run/broker.json lacks and that send INFO at their settings' address. */
async function answeringUnrecorded(layout: RootLayout, cluster: ClusterSettings, alive: ReadonlyMap<string, NodeRuntime>, rootHost: string, guards: Guards): Promise<Set<string>> {
  if (guards.UNRECORDED_NODES_IGNORED) return new Set();
  const candidates = cluster.nodes.filter((n) => !alive.has(n.name) && !isLocalNode(n, rootHost));
  const answers = await Promise.all(candidates.map(async (n) => [n.name, await sendsInfo(n.port, nodeHost(n, rootHost), INFO_PROBE_MS)] as const));
  return new Set(answers.filter(([, ok]) => ok).map(([name]) => name));
}

/** Nodes on other hosts that do not run: `up` cannot start them; each host's agent does (docs/cluster.md "A cluster across hosts"). */
function refuseRemoteDown(layout: RootLayout, rootHost: string, remote: readonly ClusterNodeSettings[]): never {
  const root = shellWord(layout.root);
  throw new CotalError("broker-not-running", `node${remote.length > 1 ? "s" : ""} ${remote.map((n) => `${n.name} (host ${nodeHost(n, rootHost)})`).join(", ")} not running, and not on this host: each is started by cotal node run on its own host`, {
    next: `cotal --root ${root} up --detach   # once ${remote.map((n) => `\`cotal --root ${root} node run --node ${n.name}\` runs on ${nodeHost(n, rootHost)}`).join(" and ")}`,
    details: { nodes: remote.map((n) => ({ name: n.name, host: nodeHost(n, rootHost) })) },
  });
}

/**
 * Under the writer lease: seed the record (a new root), or resume it by the crash-resume table
 * with every node as the live broker; then apply the committed list to every node and record
 * each node's proof. Whatever a node booted with, it serves the committed list only after this.
 * Exported for test/one-writer.test.ts, which proves it writes only through saga/apply.ts.
 */
export async function applyClusterRecord(layout: RootLayout, runtime: BrokerRuntime, cluster: ClusterSettings, guards: Guards, onNotice: (m: string) => void, removing?: string): Promise<InventoryRecord> {
  const store = await connectReplicated(runtime.url, layout, cluster.replicas, guards);
  try {
    // A cold cluster's buckets may still be electing their leaders: wait for both to answer.
    await pastBucketElection(() => store.read());
    // The agents' proofs bucket: an agent never creates it (docs/cluster.md "The agent's proof on its own key"); opening it here does.
    await pastBucketElection(() => store.proofsKv(cluster.replicas).get(proofKey(cluster.nodes[0]?.name ?? "")));
    const keeper = new LeaseKeeper(store, await pastBucketElection(() => acquireLeaseWaiting(store, leaseKeyFor(layout), "cotal up (cluster)")));
    try {
      const fence = (): Promise<boolean> => keeper.held();
      const reloader = clusterReloader(runtime, runtime.nodes ?? [], layout, guards, store);
      const w: ClusterWriter = { layout, guards, store, members: cluster.nodes.map((n) => n.name), fence, reload: () => reloader.reload({ fence, leaseId: keeper.lease.leaseId }) };
      const read = await store.read();
      if (!read) {
        const rec = await seedCluster(w);
        onNotice(`seeded the replicated inventory (R${cluster.replicas}): ${rec.spaces.join(", ")}`);
        return rec;
      }
      const out = await executeResume(read, { layout, guards, cas: (r, rev) => store.update(r, rev), onNotice, live: { reload: w.reload, leaseHeld: fence } });
      if (out.kind === "boot") throw new CotalError("resume-refused", "a live resume asked for a boot", { next: "cotal broker reconcile" });
      const base: VersionedRecord = out.base;
      const after = certainInventory(layout, guards).map((s) => s.name).filter((s) => s !== removing || base.record.spaces.includes(s));
      const diff = diffLists(after, base.record);
      if (diff.diskOnly.length + diff.kvOnly.length > 0) {
        throw new CotalError("divergence", `the tenant list on disk and the cluster's inventory disagree (disk-only: [${diff.diskOnly.join(", ")}], kv-only: [${diff.kvOnly.join(", ")}]); no node was given tenants`, {
          next: "cotal broker reconcile   # prints both lists and asks you to adopt one",
          details: { ...diff },
        });
      }
      return await applyCommitted(w, base);
    } finally {
      await keeper.stop(true);
    }
  } finally {
    await store.close();
  }
}

/** What the cluster boot's applies share: the store, the members, the writer lease's fence, the reload of every node. */
interface ClusterWriter {
  layout: RootLayout;
  guards: Guards;
  store: AuthorityStore;
  members: string[];
  fence: () => Promise<boolean>;
  reload: () => Promise<ReloadVerdict>;
}

/** A new root: the disk's list through the one apply path (saga/apply.ts) to every node; the seed is its record. */
async function seedCluster(w: ClusterWriter): Promise<InventoryRecord> {
  const disk = certainInventory(w.layout, w.guards).map((s) => s.name);
  const list = renderList(w.layout, disk, w.guards);
  const applied = await applyConfig({
    target: w.layout.serverConf,
    config: () => list.text,
    fence: { held: w.fence, lost: () => new CotalError("lease-lost", "the writer lease expired before the first list was applied; nothing was renamed", { next: RERUN }) },
    reload: w.reload,
    record: async (verdict) => {
      const rec: InventoryRecord = { ...seedRecord(disk, digestOfServerConf(w.layout) ?? list.digest, true), members: w.members, nodes: stamped(verdict, 1) };
      await seedInventory(w.store, rec, w.guards);
      return rec;
    },
  });
  return applied.proof;
}

/** Every node gets the committed list through the one apply path, proven from that node; a node booted without tenants admits them only here. */
async function applyCommitted(w: ClusterWriter, base: VersionedRecord): Promise<InventoryRecord> {
  const committed = renderList(w.layout, base.record.spaces, w.guards);
  const applied = await applyConfig({
    target: w.layout.serverConf,
    config: () => committed.text,
    fence: { held: w.fence, lost: () => new CotalError("lease-lost", "the writer lease expired before the committed list was applied; nothing was renamed", { next: RERUN }) },
    reload: w.reload,
    record: async (verdict) => {
      const proven: InventoryRecord = {
        ...base.record,
        appliedGeneration: base.record.generation,
        configDigest: committed.digest,
        serverConfigDigest: undefined,
        members: w.members,
        // A forgotten node's proof goes with it (docs/cluster.md "Leaving: cotal node forget").
        nodes: onlyMembers({ ...base.record.nodes, ...stamped(verdict, base.record.generation) }, w.members),
      };
      await w.store.update(proven, base.revision);
      return proven;
    },
  });
  return applied.proof;
}

/** How long `up` waits for every node to serve its tenant streams: R3 groups elect after the meta leader. */
const STREAMS_SERVED_MS = 30_000;

/**
 * A node that booted before its tenants were known (e.g. by an older cotal) runs their stored streams
 * outside their assignment, or not at all: no reload heals it. Stop it, so ensureNodes restarts it
 * with every tenant held. Judged twice a second apart, so a node still recovering is left alone; a
 * stream with no leader is an election, not this.
 */
async function restartUnserving(layout: RootLayout, progress: (m: string) => void, guards: Guards): Promise<string[]> {
  const { prior, alive: recorded } = liveNodesOrRefuse(layout, guards);
  // Only a node on this host is restarted from here; one elsewhere is its own agent's (docs/cluster.md "cotal node").
  const alive = new Map([...recorded].filter(([, n]) => nodeAlive(n)));
  if (alive.size === 0 || !prior) return [];
  const tenants = tenantAccounts(layout, accountInventory(layout).spaces.map((s) => s.name));
  const unserving = async (nodes: readonly NodeRuntime[]): Promise<{ node: NodeRuntime; streams: string }[]> => {
    const checks = await Promise.all(nodes.map(async (node) => ({ node, check: await checkNodeStreams(layout, node, tenants, prior.serverVersion) })));
    return checks.flatMap(({ node, check }) => {
      const bad = "problems" in check ? check.problems.filter((p) => p.problem !== "no leader") : [];
      return bad.length > 0 ? [{ node, streams: describeProblems(bad) }] : [];
    });
  };
  const suspects = await unserving([...alive.values()]);
  if (suspects.length === 0) return [];
  await new Promise((r) => setTimeout(r, 1_000));
  const notes: string[] = [];
  for (const { node, streams } of await unserving(suspects.map((s) => s.node))) {
    notes.push(`node ${node.name} did not serve its tenant streams (${streams}): restarted it with every tenant held`);
    progress(`node ${node.name} does not serve its tenant streams (${streams}): restarting it with every tenant held`);
    await stopProcess(node.owner.pid, 10_000, () => !nodeAlive(node));
  }
  return notes;
}

/** After the apply: every node serves every tenant stream it lists, or `up` refuses naming them (a restart never reports serving without it). */
async function untilStreamsServed(layout: RootLayout, nodes: readonly NodeRuntime[], spaces: readonly string[], serverVersion: string, progress: (m: string) => void): Promise<void> {
  progress("waiting for every node to serve its tenant streams (assigned, each with a leader)");
  const checks = await waitStreamsServed(layout, nodes, tenantAccounts(layout, spaces), serverVersion, STREAMS_SERVED_MS);
  if (Object.values(checks).every(served)) return;
  throw new CotalError("broker-start-failed", `tenant streams are not served ${Math.round(STREAMS_SERVED_MS / 1000)} s after the record was applied: ${describeChecks(checks)}`, {
    next: `tail -n 40 ${nodes.map((n) => n.logFile).join(" ")}   # why JetStream did not assign or elect them; cotal --root ${shellWord(layout.root)} up --detach restarts a node whose stored streams are unassigned or not running`,
    details: { checks },
  });
}
