import { existsSync } from "node:fs";
import { brokerState, nodeAlive } from "../broker/runtime.js";
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
import { readJournal, restoreRerun, standingQuiesce, type JournalEntry } from "../maintenance/journal.js";
import { ownerStatus } from "../lock/process-identity.js";
import { quiescedOnDisk } from "../maintenance/quiesce.js";
import { readProvisioningOwed } from "../provision/owed.js";
import { configPicture } from "./config-picture.js";
import { deriveState, type DerivedState } from "./derive-state.js";
import { clusterNodesStatus, type NodeStatus } from "./cluster-status.js";
import { readNodeAgentState } from "../root/node-state.js";

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
    /** Servers of this root that no runtime record names (a killed `up`, a leaked maintenance broker). */
    strays: RootServer[];
    /** A cluster root only: every node, its process and its own proof (ops/cluster-status.ts). */
    nodes?: NodeStatus[];
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

async function readInventory(url: string, authority: AccountRecord): Promise<{ record?: InventoryRecord & { revision: number }; error?: string }> {
  let store: AuthorityStore | undefined;
  try {
    store = await AuthorityStore.connect(url, authority, { name: "cotal status", timeoutMs: 3_000 });
    const vr = await store.read();
    return vr ? { record: { ...vr.record, revision: vr.revision } } : { error: "no inventory record yet (run `cotal up` to seed it)" };
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

/** Reads everything without taking the lock or changing a byte: safe to run any time. */
export async function status(opts: { root: string }): Promise<StatusReport> {
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) {
    return { root: layout.root, exists: false, state: "absent", why: "no root here", broker: { running: false, staleRuntime: false, strays: [] }, spaces: [], corrupt: [], inventory: null, diskOnly: [], kvOnly: [], configOnly: [], journal: null, provisioningOwed: [], lock: null, quiesced: [] };
  }
  const st = brokerState(layout);
  const rt = st.runtime;
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
  const picture = configPicture(conf, inv.spaces, vouched);
  const preloaded = new Set(picture.preloadedNames);
  const configOnly = picture.unknownKeys;

  let inventory: StatusReport["inventory"] = null;
  let inventoryError: string | undefined;
  // A cluster whose first node is down still has the record on the others (R3): read it through one of them.
  const liveNode = st.running ? undefined : rt?.nodes?.find((n) => nodeAlive(n));
  const readUrl = st.running ? st.runtime.url : liveNode?.url;
  if (readUrl && typeof authority === "object") {
    const r = await readInventory(readUrl, authority);
    inventory = r.record ?? null;
    inventoryError = r.error;
  } else if (!st.running) inventoryError = "the broker is down; the inventory lives in its store";

  const diskNames = inv.spaces.map((s) => s.name);
  const inKv = inventory ? new Set(inventory.spaces) : undefined; // a Set: 10,000 tenants, no O(n²)
  const spaces = inv.spaces.map((s) => ({
    name: s.name,
    publicKey: s.publicKey,
    createdAt: s.createdAt,
    inConfig: preloaded.has(s.name),
    inInventory: inKv ? inKv.has(s.name) : null,
  }));
  let journal: JournalEntry | null = null;
  let journalError: string | undefined;
  try {
    journal = readJournal(layout) ?? null;
  } catch (err) {
    journalError = (err as Error).message;
  }
  const digest = conf ? configDigest(conf) : undefined;
  const derived = deriveState({
    exists: true,
    corrupt: corrupt.length,
    running: st.running,
    ...(inventory ? { record: inventory } : {}),
    diskNames,
    preloadedNames: spaces.filter((s) => s.inConfig).map((s) => s.name),
    unknownPreloads: configOnly.length,
    ...(digest ? { serverConfDigest: digest } : {}),
  });
  const settings = (() => {
    try {
      return loadSettings(layout);
    } catch {
      return undefined;
    }
  })();
  const lock = readLockOwner(layout.root);
  // A stopped cluster root has no runtime record: its nodes come from settings.json, none running.
  const cluster = (() => {
    try {
      return clusterOf(layout, settings);
    } catch {
      return undefined;
    }
  })();
  const listed = rt?.nodes ?? cluster?.nodes.map((n) => ({ name: n.name, url: `nats://${settings?.host ?? "127.0.0.1"}:${n.port}`, port: n.port, clusterPort: n.clusterPort }));
  const nodes = listed
    ? clusterNodesStatus(
        listed,
        inventory,
        Object.fromEntries(listed.map((n) => [n.name, digestOf(readTextIfExists(layout.nodeServerConf(n.name)))])),
        Object.fromEntries(listed.map((n) => [n.name, readNodeAgentState(layout, n.name)])),
      )
    : undefined;
  const nodePids = new Set((rt?.nodes ?? []).map((n) => n.owner.pid));
  const strays = serversOfRoot(layout).filter((p) => p.pid !== rt?.owner.pid && !nodePids.has(p.pid));
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
    quiesced: quiescedTenants(journal, quiescedOnDisk(layout, inv.spaces), journal?.op === "quiesce" ? ownerStatus(journal.owner) : "dead"),
    ...(journal?.op === "quiesce" && journal.stage === "unfinished" ? { restoreUnfinished: { space: journal.space, from: journal.out, attemptId: journal.attemptId, next: restoreRerun(journal) } } : {}),
  };
}
