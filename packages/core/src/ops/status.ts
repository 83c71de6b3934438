import { readAgentProofs, withAgentProofs } from "../inventory/node-proofs.js";
import { GUARDS_ON, type Guards } from "../guards.js";
import { existsSync } from "node:fs";
import { brokerState, nodeAlive, nodeStopped, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { serversOfRoot, type RootServer } from "../broker/server-scan.js";
import { AuthorityStore } from "../inventory/authority-store.js";
import { diffLists, type InventoryRecord } from "../inventory/record.js";
import { readLockOwner } from "../lock/maintenance-lock.js";
import { configDigest } from "../render/server-config.js";
import { accountInventory, type CorruptRecord } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { parseAccountRecord, parseBrokerRecord, type AccountRecord } from "../root/records.js";
import { readTextIfExists } from "../root/secret-files.js";
import { loadSettings } from "../root/settings.js";
import { clusterOf } from "../root/cluster-settings.js";
import { journalRefusal, readJournal, restoreRerun, standingQuiesce, type JournalEntry } from "../journal/journal.js";
import { nameRoot } from "../error-shape.js";
import { ownerStatus } from "../lock/process-identity.js";
import { quiescedOnDisk } from "../backup/quiesce.js";
import { readProvisioningOwed } from "../provision/owed.js";
import { configPicture } from "../render/config-picture.js";
import { deriveState, type DerivedState } from "./derive-state.js";
import { clusterNodesStatus, nodeStreamChecks, type NodeStatus, type UnrecordedNode } from "./cluster-status.js";
import { authorityProbe, NODE_ANSWER_MS, rankNodes, reachNodes, type NodeReach } from "../verb/reach.js";
import { answeringUrls } from "../verb/session.js";
import { readNodeAgentState } from "../root/node-state.js";
import { keyRotationsOf, type KeyRotationStatus } from "./rotate-key-status.js";

export interface SpaceStatus {
  name: string;
  publicKey: string;
  createdAt: string;
  inConfig: boolean;
  inInventory: boolean | null;
}

export interface StatusReport {
  root: string;
  exists: boolean;
  state: DerivedState;
  why: string;
  broker: {
    running: boolean;
    pid?: number;
    url?: string;
    host?: string;
    port?: number;
    serverVersion?: string;
    startedAt?: string;
    detached?: boolean;
    staleRuntime: boolean;
    /** Servers of this root that no runtime record names (a killed `up`, a leaked private broker). */
    strays: RootServer[];
    /** A cluster root only: every node, its process and its own proof (ops/cluster-status.ts). */
    nodes?: NodeStatus[];
    /** A cluster root only: the node status read the record through (the first that answered, preferring one whose JetStream reads it). */
    through?: string;
  };
  operator?: string;
  multiSpace?: boolean;
  spaces: SpaceStatus[];
  corrupt: CorruptRecord[];
  /** The KV record (null when the broker is down or the record is absent); `inventoryError` says why. */
  inventory: (InventoryRecord & { revision: number }) | null;
  inventoryError?: string;
  diskOnly: string[];
  kvOnly: string[];
  configOnly: string[];
  configDigest?: string;
  journal: JournalEntry | null;
  journalError?: string;
  /** Spaces a killed verb may have left trusted but not provisioned; `cotal up` settles them. */
  provisioningOwed: string[];
  lock: ReturnType<typeof readLockOwner> | null;
  /**
   * Tenants quiesced by an online backup: named by a quiesce entry, or by their account JWT's
   * `revocations["*"]` (both, normally). Their clients are refused until the lift.
   */
  quiesced: QuiescedTenant[];
  /** An online `space restore --replace` that `cotal up` lifted after its deletion began: the tenant's data is gone until the re-run. */
  restoreUnfinished?: { space: string; from: string; attemptId: string; next: string };
  /** Signing-key rotations in progress (`space rotate-key`): interrupted, or keeping the old key until `--finish`; each with its next, the root named. */
  keyRotations?: KeyRotationStatus[];
  /** What to run next for the headline state, naming the root (absent when nothing is owed). */
  next?: string;
}

export interface QuiescedTenant {
  space: string;
  /** journal: the entry, the JWT not (yet) re-signed; jwt: the JWT with no entry; both: a backup in flight or stopped. */
  source: "journal" | "jwt" | "both";
  revokeAllBefore?: number;
  attemptId?: string;
  stage?: string;
  owner?: { pid: number; host: string; status: "alive" | "dead" | "unknown" };
  /** What converges it: nothing while its backup runs, else `cotal up`. */
  next: string;
}

/** Pure: the quiesced tenants from the journal entry and the JWTs on disk. */
export function quiescedTenants(journal: JournalEntry | null, onDisk: { space: string; revokeAllBefore: number }[], ownerState: "alive" | "dead" | "unknown" = "dead"): QuiescedTenant[] {
  const entry = standingQuiesce(journal);
  const out: QuiescedTenant[] = onDisk.map((q) => ({ space: q.space, source: "jwt" as const, revokeAllBefore: q.revokeAllBefore, next: "cotal up   # lifts it" }));
  if (entry) {
    const alive = ownerState !== "dead";
    const found = out.find((q) => q.space === entry.space);
    const fields = {
      attemptId: entry.attemptId,
      stage: entry.stage,
      owner: { pid: entry.owner.pid, host: entry.owner.host, status: ownerState },
      next: entry.purpose === "restore"
        ? alive ? `wait for the restore (pid ${entry.owner.pid}) to finish; it lifts the quiesce itself` : `${restoreRerun(entry)}   # finishes the restore; cotal up only lifts it`
        : alive ? `while kill -0 ${entry.owner.pid} 2>/dev/null; do sleep 1; done; cotal status   # the backup lifts the quiesce itself` : "cotal up   # lifts the quiesce and removes a partial artifact",
    };
    if (found) Object.assign(found, { source: "both" as const, ...fields });
    else out.push({ space: entry.space, source: "journal", ...fields });
  }
  return out.sort((a, b) => (a.space < b.space ? -1 : 1));
}

async function readInventory(url: string | readonly string[], authority: AccountRecord, guards: Guards): Promise<{ record?: InventoryRecord & { revision: number }; error?: string }> {
  let store: AuthorityStore | undefined;
  try {
    store = await AuthorityStore.connect(url, authority, { name: "cotal status", timeoutMs: 3_000, guards });
    const vr = await store.read();
    if (!vr) return { error: "no inventory record yet (run `cotal up` to seed it)" };
    // A cluster's agents vouch for their own nodes on keys of their own: laid over the writer's record (docs/cluster.md).
    const proofs = vr.record.members ? await readAgentProofs(store.proofsKv(undefined, { create: false }), vr.record.members) : [];
    return { record: { ...withAgentProofs(vr.record, proofs), revision: vr.revision } };
  } catch (err) {
    return { error: (err as Error).message };
  } finally {
    await store?.close().catch(() => undefined);
  }
}

function digestOf(text: string | undefined): string | undefined {
  return text === undefined ? undefined : configDigest(text);
}

/**
 * The top-level state is derived through node 1 (the node verbs connect through): on a cluster
 * root, name the nodes whose own state differs, so a "clean" or "stopped" never hides one.
 */
function nodesWhy(nodes: NodeStatus[] | undefined, running: boolean): string {
  const odd = (nodes ?? []).filter((n) => (running ? n.state !== "clean" : n.state !== "stopped"));
  return odd.length === 0 ? "" : `; node${odd.length > 1 ? "s" : ""} ${odd.map((n) => `${n.name} ${n.state}`).join(", ")}`;
}

/**
 * What refuses every mutating verb now with nobody working on it (docs/refusals.md, "the journal blocks
 * the root"): a journal entry whose owner is gone, or the maintenance lock of a dead holder. A live
 * owner is busy, not blocked: it clears by itself.
 */
export function blockOf(journal: JournalEntry | null, journalError: string | undefined, lock: StatusReport["lock"], owner: "alive" | "dead" | "unknown", guards: Guards): { why: string; next: string } | undefined {
  if (journalError) return { why: `the maintenance journal is unreadable: ${journalError}`, next: "cotal status --json   # then repair or move aside the journal it names" };
  const refusal = guards.STATUS_IGNORES_BLOCKS ? undefined : journalRefusal(journal ?? undefined, { verb: "status" }, owner);
  if (refusal && refusal.code !== "lock-held") return { why: refusal.message, next: refusal.next ?? "cotal status" };
  if (lock && lock !== "corrupt" && lock.status === "dead" && !guards.STATUS_IGNORES_BLOCKS) {
    return { why: `the maintenance lock is held by pid ${lock.pid} on ${lock.host} (${lock.purpose}), which is gone: the next verb takes it over`, next: "cotal up   # takes the lock over and settles what its holder left" };
  }
  if (lock === "corrupt") return { why: "the maintenance lock file is unreadable: every verb refuses", next: "cotal status --json   # then move the lock file aside" };
  return undefined;
}

/** The headline's next step, by state: the block's own, else what resolves the state (docs/vocabulary.md). */
function nextFor(state: DerivedState, block: { next: string } | undefined, owed: boolean, running: boolean): string | undefined {
  if (block) return block.next;
  if (state === "uncertain") return "cotal status --json   # then repair or move aside the corrupt records it names";
  if (state === "stopped") return "cotal up --detach";
  if (state === "PENDING" || state === "PROMOTED-BUT-UNCOMMITTED" || state === "PROVEN-BUT-UNCOMMITTED") return "cotal up   # resumes the interrupted mutation by the crash-resume table";
  if (state === "DEGRADED") return "cotal up   # restarts or catches up the nodes named";
  if (state === "clean") return owed && running ? "cotal up --detach   # provisions what a killed verb left owed" : undefined;
  if (state === "absent") return undefined;
  return "cotal broker reconcile   # prints both lists and the ways out";
}

function readJournalSafe(layout: RootLayout): { journal: JournalEntry | null; journalError?: string } {
  try {
    return { journal: readJournal(layout) ?? null };
  } catch (err) {
    return { journal: null, journalError: (err as Error).message };
  }
}

/** The root's files as they are: records (the unreadable ones as corrupt), server.conf and what it preloads. */
function diskFacts(layout: RootLayout) {
  const inv = accountInventory(layout);
  const brokerText = readTextIfExists(layout.brokerFile);
  const brokerRec = brokerText === undefined ? undefined : parseBrokerRecord(brokerText);
  const corrupt = [...inv.corrupt];
  if (typeof brokerRec === "string") corrupt.push({ path: layout.brokerFile, reason: brokerRec });
  const authText = readTextIfExists(layout.authorityFile);
  const authority = authText === undefined ? undefined : parseAccountRecord(authText, { kind: "authority" });
  if (typeof authority === "string") corrupt.push({ path: layout.authorityFile, reason: authority });
  const conf = readTextIfExists(layout.serverConf);
  const vouched = [...(typeof brokerRec === "object" ? [brokerRec.system.publicKey] : []), ...(typeof authority === "object" ? [authority.publicKey] : [])];
  return { inv, brokerRec, authority, corrupt, conf, picture: configPicture(conf, inv.spaces, vouched) };
}

/**
 * The KV record through the broker, or why not. On a cluster root every node is asked first
 * (docs/cluster.md "Verbs through any node", NODE_ANSWER_MS) and the record read through the ranked
 * nodes that answered: a node down, cut or without a quorum is skipped; `through` names the first.
 */
async function inventoryOf(layout: RootLayout, st: ReturnType<typeof brokerState>, authority: AccountRecord | string | undefined, guards: Guards): Promise<{ record: StatusReport["inventory"]; error?: string; reach?: NodeReach[]; through?: string }> {
  const rt = st.runtime;
  const listed = listedNodes(layout, rt);
  const reach = listed && typeof authority === "object" ? await reachListed(listed, authority) : undefined;
  const ranked = reach ? rankNodes(reach, guards).filter((r) => r.reachable) : undefined;
  const urls = !rt ? [] : ranked && st.running ? ranked.map((r) => r.url) : st.running ? answeringUrls(rt) : (rt.nodes ?? []).filter((n) => nodeAlive(n) && !nodeStopped(n)).map((n) => n.url);
  const via = { ...(reach ? { reach } : {}), ...(ranked?.[0] && urls.length > 0 ? { through: ranked[0].name } : {}) };
  if (urls.length > 0 && typeof authority === "object") {
    const r = await readInventory(urls, authority, guards);
    return { record: r.record ?? null, ...(r.error ? { error: r.error } : {}), ...via };
  }
  if (st.running) return { record: null, error: reach ? `no node of this root answered within ${NODE_ANSWER_MS} ms` : "no server of this root can answer (stopped)", ...via };
  return { record: null, error: "the broker is down; the inventory lives in its store", ...via };
}

/** A read-only verb's URLs in the order status reached the nodes (the node it went through first, unreachable ones last). */
export function reachedFirst(s: Pick<StatusReport, "broker">, urls: readonly string[]): string[] {
  const nodes = s.broker.nodes ?? [];
  const rank = (u: string): number => {
    const n = nodes.find((x) => x.url === u);
    return n?.name === s.broker.through ? 0 : n?.reachable === false ? 2 : 1;
  };
  return [...urls].sort((a, b) => rank(a) - rank(b));
}

/** Every listed node asked at once; a stopped (SIGSTOP) one is unreachable without waiting on it. */
async function reachListed(listed: readonly (NodeRuntime | UnrecordedNode)[], authority: AccountRecord): Promise<NodeReach[]> {
  const stopped = (n: NodeRuntime | UnrecordedNode): boolean => n.owner !== undefined && nodeStopped(n as NodeRuntime);
  const asked = await reachNodes(listed.filter((n) => !stopped(n)), authorityProbe(authority));
  return listed.map((n) => asked.find((r) => r.name === n.name) ?? { name: n.name, url: n.url, reachable: false, jetstream: null, why: `pid ${n.owner?.pid} is stopped (SIGSTOP): it holds its port and answers nothing`, ms: 0 });
}

/** A cluster root's nodes: as run/broker.json records them, else (a stopped root) from settings.json; undefined on a single broker. */
function listedNodes(layout: RootLayout, rt: BrokerRuntime | undefined): (NodeRuntime | UnrecordedNode)[] | undefined {
  if (rt?.nodes) return rt.nodes;
  const settings = settingsOf(layout);
  let cluster: ReturnType<typeof clusterOf> | undefined;
  try {
    cluster = clusterOf(layout, settings);
  } catch {
    cluster = undefined;
  }
  return cluster?.nodes.map((n) => ({ name: n.name, url: `nats://${n.host ?? settings?.host ?? "127.0.0.1"}:${n.port}`, port: n.port, clusterPort: n.clusterPort }));
}

/** Reads everything without taking the lock or changing a byte: safe to run any time. */
export async function status(opts: { root: string; guards?: Guards }): Promise<StatusReport> {
  const guards = opts.guards ?? GUARDS_ON;
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) {
    return { root: layout.root, exists: false, state: "absent", why: "no root here", broker: { running: false, staleRuntime: false, strays: [] }, spaces: [], corrupt: [], inventory: null, diskOnly: [], kvOnly: [], configOnly: [], journal: null, provisioningOwed: [], lock: null, quiesced: [], keyRotations: [] };
  }
  const st = brokerState(layout, { firstNodeOnly: guards.VERBS_FIRST_NODE_ONLY, unrecordedIgnored: guards.UNRECORDED_NODES_IGNORED });
  const rt = st.runtime;
  const { inv, brokerRec, authority, corrupt, conf, picture } = diskFacts(layout);
  const preloaded = new Set(picture.preloadedNames);
  const configOnly = picture.unknownKeys;

  const { record: inventory, error: inventoryError, reach, through } = await inventoryOf(layout, st, authority, guards);

  const diskNames = inv.spaces.map((s) => s.name);
  const inKv = inventory ? new Set(inventory.spaces) : undefined; // a Set: 10,000 tenants, no O(n²)
  const spaces = inv.spaces.map((s) => ({
    name: s.name,
    publicKey: s.publicKey,
    createdAt: s.createdAt,
    inConfig: preloaded.has(s.name),
    inInventory: inKv ? inKv.has(s.name) : null,
  }));
  const { journal, journalError } = readJournalSafe(layout);
  const owner = journal?.op === "quiesce" ? ownerStatus(journal.owner) : "dead";
  const lock = readLockOwner(layout.root);
  const block = blockOf(journal, journalError, lock ?? null, owner, guards);
  const stoppedPids = rt && st.running && answeringUrls(rt).length === 0 ? [...new Set([rt.owner.pid, ...(rt.nodes ?? []).map((n) => n.owner.pid)])] : [];
  const unreachable = stoppedPids.length > 0 ? `the nats-server of this root (pid ${stoppedPids.join(", ")}) is stopped (SIGSTOP): it holds its port and answers nothing` : undefined;
  const digest = conf ? configDigest(conf) : undefined;
  const nodes = await nodesOf(layout, rt, inventory, reach);
  const derived = deriveState({
    exists: true,
    corrupt: corrupt.length,
    running: st.running,
    ...(inventory ? { record: inventory } : {}),
    diskNames,
    preloadedNames: spaces.filter((s) => s.inConfig).map((s) => s.name),
    unknownPreloads: configOnly.length,
    ...(digest ? { serverConfDigest: digest } : {}),
    ...(block ? { blocked: block.why } : {}),
    ...(unreachable ? { unreachable } : {}),
    ...(nodes && st.running ? { degradedNodes: nodes.filter((n) => n.state !== "clean").map((n) => `${n.name}: ${n.state}`) } : {}),
  });
  const settings = settingsOf(layout);
  const nodePids = new Set((rt?.nodes ?? []).map((n) => n.owner.pid));
  const strays = serversOfRoot(layout, guards).filter((p) => p.pid !== rt?.owner.pid && !nodePids.has(p.pid));
  const keyRotations = keyRotationsOf(layout, inv.spaces).map((k) => ({ ...k, next: nameRoot(k.next, layout.root) }));
  return {
    root: layout.root,
    exists: true,
    state: derived.state,
    why: `${derived.why}${nodesWhy(nodes, st.running)}${strays.length > 0 ? `; ${strays.length} unrecorded nats-server(s) of this root run (${strays.map((p) => `pid ${p.pid}: ${p.role}`).join(", ")}): cotal down stops them` : ""}`,
    broker: {
      running: st.running,
      ...(rt ? { pid: rt.owner.pid, url: rt.url, host: rt.host, port: rt.port, serverVersion: rt.serverVersion, startedAt: rt.startedAt, detached: rt.detached } : settings ? { host: settings.host, port: settings.port } : {}),
      staleRuntime: !st.running && st.stale,
      strays,
      ...(nodes ? { nodes } : {}),
      ...(through ? { through } : {}),
    },
    ...(typeof brokerRec === "object" ? { operator: brokerRec.operator.publicKey, multiSpace: brokerRec.multiSpace } : {}),
    spaces,
    corrupt,
    inventory,
    ...(inventoryError ? { inventoryError } : {}),
    ...(inventory ? diffLists(diskNames, inventory) : { diskOnly: [], kvOnly: [] }),
    configOnly,
    ...(digest ? { configDigest: digest } : {}),
    journal,
    ...(journalError ? { journalError } : {}),
    provisioningOwed: readProvisioningOwed(layout)?.spaces ?? [],
    lock: lock ?? null,
    quiesced: quiescedTenants(journal, quiescedOnDisk(layout, inv.spaces), owner).map((q) => ({ ...q, next: nameRoot(q.next, layout.root) })),
    ...(journal?.op === "quiesce" && journal.stage === "unfinished" ? { restoreUnfinished: { space: journal.space, from: journal.out, attemptId: journal.attemptId, next: nameRoot(restoreRerun(journal), layout.root) } } : {}),
    keyRotations,
    // a clean root with a rotation in progress: its next (the headline's own comes first)
    ...withNext(unreachable ? `kill -CONT ${stoppedPids.join(" ")}   # then it answers again` : (nextFor(derived.state, block, (readProvisioningOwed(layout)?.spaces.length ?? 0) > 0, st.running) ?? keyRotations[0]?.next), layout.root),
  };
}

function withNext(next: string | undefined, root: string): { next?: string } {
  return next === undefined ? {} : { next: nameRoot(next, root) };
}

function settingsOf(layout: RootLayout): ReturnType<typeof loadSettings> | undefined {
  try {
    return loadSettings(layout);
  } catch {
    return undefined;
  }
}

/** Every node of a cluster root with its own state; a stopped cluster root has no runtime record, so its nodes come from settings.json. */
async function nodesOf(layout: RootLayout, rt: BrokerRuntime | undefined, inventory: StatusReport["inventory"], reach: NodeReach[] | undefined): Promise<NodeStatus[] | undefined> {
  const listed = listedNodes(layout, rt);
  if (!listed) return undefined;
  return clusterNodesStatus(
    listed,
    inventory,
    Object.fromEntries(listed.map((n) => [n.name, digestOf(readTextIfExists(layout.nodeServerConf(n.name)))])),
    Object.fromEntries(listed.map((n) => [n.name, readNodeAgentState(layout, n.name)])),
    // Each running node's JetStream against its store: a node that does not serve its tenant streams is not clean (#28).
    // A node this host did not reach is not asked again (it would cost the bound twice).
    { streams: await nodeStreamChecks(layout, listed.filter((n) => reach?.find((r) => r.name === n.name)?.reachable !== false), inventory, rt?.serverVersion), root: layout.root, ...(reach ? { reach: Object.fromEntries(reach.map((r) => [r.name, r])) } : {}) },
  );
}
