import { GUARDS_ON, type Guards } from "../guards.js";
import { randomBytes } from "node:crypto";
import { renderNode } from "../broker/render-root.js";
import { nodeAlive, readNodeRuntime, readRuntime, type BrokerRuntime, type NodeRuntime } from "../broker/runtime.js";
import { afterPid, isCotalError, RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { AuthorityStore, type AgentUser, type VersionedRecord } from "../inventory/authority-store.js";
import type { SystemUser } from "../broker/system-client.js";
import { readAgentCreds } from "../root/agent-creds.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import type { NodeProof } from "../inventory/record.js";
import { releaseMaintenanceLock, releaseOwnerFile, takeOwnerFile, waitForMaintenanceLock } from "../lock/maintenance-lock.js";
import { configDigest } from "../render/server-config.js";
import { MaterialReader } from "../broker/material-bucket.js";
import { materialHeld, materialSpaces, nodeLocalOf, renderNodeFrom, type NodeLocal, type NodeMaterial } from "../broker/node-material.js";
import { clusterOf, nodeHost, type ClusterNodeSettings, type ClusterSettings } from "../root/cluster-settings.js";
import { RootLayout } from "../root/layout.js";
import { nodeDirOf, readBundledMaterial } from "../root/node-dir.js";
import { writeNodeAgentState, type NodeAgentState } from "../root/node-state.js";
import { ensureSecretDir, readTextIfExists } from "../root/secret-files.js";
import { loadSettings, type RootSettings } from "../root/settings.js";
import { applyToNode } from "../saga/cluster-reloader.js";
import type { ReloadVerdict } from "../saga/reload.js";
import { holderIsDead, LEASE_WAIT_MS, selfHolder } from "../saga/lease-holder.js";
import { askStands, readNodeAsk, type NodeAsk } from "../inventory/node-ask.js";
import type { Lease } from "../inventory/lease.js";
import { LeaseKeeper } from "../saga/lease-keeper.js";
import { allowedIsClaimList, nodeAllowedSpaces, nodeNeedsApply, type NodeObservation } from "../saga/node-decision.js";
import { agentProof, readAgentProofs, withAgentProofs, writeAgentProof } from "../inventory/node-proofs.js";
import { connectReplicated, liveNodesOrRefuse, startClusterNodes } from "./cluster-nodes.js";
import { describeChecks, served, waitStreamsServed } from "./node-streams.js";
import { shellWord } from "../error-shape.js";
import { stopProcess } from "../broker/stop-process.js";
import { downStopOf, type DownStop } from "../broker/stop-intent.js";
import { leaseKeyFor } from "../verb/session.js";

export interface NodeAgentOptions {
  root: string;
  node: string;
  /** One round (start, read, apply, prove), then return: for scripts and tests. */
  once?: boolean;
  /** The periodic check of the node's liveness and the record (a KV watch wakes it sooner). Default 2 s. */
  intervalMs?: number;
  /** Stops the loop between rounds (SIGTERM/SIGINT); a round in flight finishes and releases the lease. */
  signal?: AbortSignal;
  /** One line per state change, and one per apply. */
  onEvent?: (line: string) => void;
  /** The guards the entry handed in (default: the ones handed to the core; docs/ablation.md). */
  guards?: Guards;
}

export interface NodeAgentResult {
  node: string;
  state: NodeAgentState["state"];
  generation?: number;
  reason?: string;
  next?: string;
  /** Applies this agent made (render, fence, rename, reload, prove) and nodes it started. */
  applied: number;
  started: number;
}

/** What an apply of this node was made on: the store, the record it decided on, the node, the lease's fence, when it began. */
type AppliedOn = { store: AuthorityStore; read: VersionedRecord | undefined; node: NodeRuntime; fence: () => Promise<boolean>; signalledAt: number };

type Round = { state: NodeAgentState["state"]; generation?: number; reason?: string; next?: string; error?: CotalError };

const DEFAULT_INTERVAL_MS = 2_000;
const LOCK_WAIT_MS = 30_000;
/** How often an agent waiting out a writer's lease looks for that writer's ask. */
const ASK_POLL_MS = 200;
/** How long a round waits for its node to serve its tenant streams: R3 groups elect after the node returns. */
const STREAMS_SERVED_MS = 30_000;
/** How long a boot waits for the other nodes to hand over the node material before it renders from disk. */
const OTHERS_MS = 3_000;

/**
 * `cotal node run` (docs/cluster.md "cotal node"): keeps one cluster node on the committed record.
 * Each round: start the node with every tenant held (none admitted) if it does not run; read the
 * record from the replicated store; if the node's bytes or its proof do not match what it may run
 * (the committed list without a pending claim's removes), apply that list to this node only under
 * the writer lease and record its proof; report serving once the node serves every tenant stream it
 * hosts. A record it cannot read leaves the node as it is (a node it started: in maintenance) and
 * says why; the next round retries.
 */
export async function runNodeAgent(opts: NodeAgentOptions): Promise<NodeAgentResult> {
  const layout = new RootLayout(opts.root);
  const settings = loadSettings(layout);
  const cluster = clusterOf(layout, settings);
  if (!settings || !cluster) throw new CotalError("invalid-argument", `${layout.root} is not a cluster root: cotal node runs beside a node of \`cotal up --cluster N\``, { next: `cotal status --root ${layout.root}` });
  const self = cluster.nodes.find((n) => n.name === opts.node);
  if (!self) throw new CotalError("invalid-argument", `${layout.root} has no node ${JSON.stringify(opts.node)}; its nodes: ${cluster.nodes.map((n) => n.name).join(", ")}`, { next: `cotal node run --node ${cluster.nodes[0]?.name ?? "<name>"}` });
  const bundled = nodeDirOf(layout.root);
  if (bundled !== undefined && bundled !== self.name) throw new CotalError("invalid-argument", `${layout.root} is node ${bundled}'s directory, not ${self.name}'s`, { next: `cotal --root ${shellWord(layout.root)} node run --node ${bundled}` });
  const guards = opts.guards ?? GUARDS_ON;
  const release = takeAgentLock(layout, self.name, guards);
  const agent = new NodeAgent(layout, settings, cluster, self, opts.onEvent ?? (() => undefined), guards);
  try {
    for (;;) {
      const round = await agent.round();
      if (opts.once) {
        if (round.error) throw round.error;
        return agent.result(round);
      }
      if (opts.signal?.aborted) return agent.result(round);
      await agent.sleep(opts.intervalMs ?? DEFAULT_INTERVAL_MS, opts.signal);
      if (opts.signal?.aborted) return agent.result(round);
    }
  } finally {
    await agent.close();
    release();
  }
}

/**
 * One agent a node (issue #28: a second `node run` for the same node was accepted and both applied):
 * the create-exclusive owner file nodes/<name>/agent.lock, taken before the agent touches anything;
 * a dead agent's file is taken over. Returns its release.
 */
function takeAgentLock(layout: RootLayout, node: string, guards: Guards): () => void {
  if (guards.NODE_AGENT_UNLOCKED) return () => undefined;
  const path = layout.nodeAgentLockFile(node);
  ensureSecretDir(layout.nodeDir(node));
  const r = takeOwnerFile(path, `cotal node run --node ${node}`, guards);
  if ("taken" in r) return () => releaseOwnerFile(path, r.taken.token);
  if ("held" in r) {
    throw new CotalError("lock-held", `node ${node} already has its agent: cotal node run pid ${r.held.pid} on ${r.held.host} (since ${r.held.startedAt})`, {
      next: r.status === "alive" ? afterPid(r.held.pid) : `the agent runs on ${r.held.host}; stop it there, or confirm it is gone and rm ${path}`,
      details: { owner: r.held, path },
    });
  }
  throw new CotalError("lock-held", `the agent lock ${path} is ${"corrupt" in r ? "unreadable" : "changing hands"}; its owner cannot be judged`, { next: `make sure no cotal node run --node ${node} is running, then: rm ${path}`, details: { path } });
}

class NodeAgent {
  #store: AuthorityStore | undefined;
  /** The node material as last read from the public bucket: a round fetches only the keys that moved. */
  readonly #material = new MaterialReader();
  /** The material of the last round that read it: the held boot and the idle judgement render from it when the node is down. */
  #known: NodeMaterial | undefined;
  #stopWatch: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #changed = false;
  #seen: { serverKey: string; at: number } | undefined;
  #applied: NodeObservation["applied"];
  /** The last writer's ask this agent answered, and on which server. */
  #answered: { id: string; serverKey: string } | undefined;
  /** The server (`pid:procStart`) last seen serving every tenant stream it hosts. */
  #streamsServed: string | undefined;
  #last = "";
  /** The writers' lease key (a node's own directory names its control root's): read once, checked every round. */
  readonly #leaseKey: string;
  /** When this agent began: a `cotal down` before it does not keep its node down. */
  readonly #since = Date.now();
  applied = 0;
  started = 0;

  constructor(
    private readonly layout: RootLayout,
    private readonly settings: RootSettings,
    private readonly cluster: ClusterSettings,
    private readonly self: ClusterNodeSettings,
    private readonly onEvent: (line: string) => void,
    private readonly guards: Guards,
  ) {
    this.#leaseKey = leaseKeyFor(layout);
  }

  get name(): string {
    return this.self.name;
  }

  result(round: Round): NodeAgentResult {
    return { node: this.name, state: round.state, ...pick(round), applied: this.applied, started: this.started };
  }

  /** One round, never throwing: what it could not do is the state it reports and writes. */
  async round(): Promise<Round> {
    let round: Round;
    try {
      round = await this.#round();
    } catch (err) {
      const e = isCotalError(err) ? err : new CotalError("broker-unreachable", (err as Error).message, { next: this.#retryNext() });
      await this.#dropStore();
      // The store's own `next` names a re-run of a verb; here the agent itself is what re-runs.
      const unreadable = e.code === "inventory-unreachable" || e.code === "inventory-busy";
      const next = unreadable ? this.#retryNext() : (e.next ?? this.#retryNext()).replaceAll(RERUN, `cotal node run --node ${this.name}`);
      round = { ...this.#idleState(unreadable ? `cannot read the cluster's record: ${e.message}` : e.message, next), error: e };
    }
    this.#report(round);
    return round;
  }

  async #round(): Promise<Round> {
    const node = await this.#ensureRunning();
    if ("stoppedBy" in node) return this.#keptDown(node.stoppedBy);
    const serverKey = `${node.owner.pid}:${node.owner.procStart ?? ""}`;
    if (this.#seen?.serverKey !== serverKey) this.#seen = { serverKey, at: Date.now() };
    const read = await this.#bringToRecord(node, serverKey);
    return this.#servingChecked(read, node, serverKey);
  }

  /** Reads the record and, when the node must be (re-)applied, applies it under the lease (or a standing writer's ask) and records the proof; returns the record it serves. */
  async #bringToRecord(node: NodeRuntime, serverKey: string): Promise<VersionedRecord> {
    const store = await this.#connect(node);
    const first = await store.read();
    // A live writer's ask is this node's instruction while it stands: its own rule would withhold the claim's adds.
    // A seed's ask comes before any record: the node answers it, then follows the record once there is one.
    const standing = await this.#standingAsk(store);
    const answered = standing ? await this.#answer(standing, { store, read: first && (await this.#withOwnProof(store, first)), node, serverKey }) : undefined;
    if (answered) return answered;
    if (!first) throw new CotalError("inventory-unreachable", "the cluster's authority store holds no record yet", { next: "cotal up --detach   # seeds the record on a new cluster root" });
    let read = await this.#withOwnProof(store, first);
    let plan = await this.#plan(store, read, serverKey);
    if (!plan.decision.apply) return read;
    this.onEvent(`cotal node: ${this.name}: applying (${plan.decision.why})`);
    await failpoint("node-decided");
    const taken = this.guards.NODE_APPLY_UNFENCED ? undefined : await this.#leaseOrAsk(store);
    if (taken && "ask" in taken) return (await this.#answer(taken.ask, { store, read, node, serverKey })) ?? read;
    const keeper = taken ? new LeaseKeeper(store, taken.lease) : undefined;
    try {
      const fence = keeper ? (): Promise<boolean> => keeper.held() : (): Promise<boolean> => Promise.resolve(true);
      if (keeper) {
        // Under the lease the record cannot move: decide again on what it says now.
        const now = await store.read();
        if (now) read = await this.#withOwnProof(store, now);
        plan = await this.#plan(store, read, serverKey);
        if (!plan.decision.apply) return read;
      }
      return (await this.#apply({ store, read, node, fence, signalledAt: 0 }, { serverKey, digest: plan.digest }, plan.text)) ?? read;
    } finally {
      await keeper?.stop(true);
    }
  }

  /** The one apply path (saga/apply.ts): stage, fence, rename, reload this node, prove, record its proof (of the ask, when one is answered). */
  async #apply(on: AppliedOn, applied: { serverKey: string; digest: string }, text: string, ask?: NodeAsk): Promise<VersionedRecord | undefined> {
    const runtime = this.#runtime() as BrokerRuntime;
    const tag = `${process.pid}${randomBytes(4).toString("hex")}`;
    const system = this.#users()?.system;
    const at = { ...on, signalledAt: performance.now() };
    return (await applyToNode(this.layout, runtime, on.node, { text, tag, fence: on.fence, guards: this.guards, ...(system ? { system } : {}), record: (verdict) => this.#recordApplied(at, applied, verdict, ask) })).proof;
  }

  /** The writer's ask naming this node, while that writer still holds the lease it asked under (inventory/node-ask.ts). */
  async #standingAsk(store: AuthorityStore): Promise<NodeAsk | undefined> {
    const ask = await readNodeAsk(store.materialKv(this.cluster.replicas, { create: false }));
    return ask?.nodes.includes(this.name) && (await this.#askStands(store, ask)) ? ask : undefined;
  }

  /** The one check of an ask (`askStands`): whether it is found standing, and the fence of its rename and proof. */
  async #askStands(store: AuthorityStore, ask: NodeAsk): Promise<boolean> {
    return askStands(ask, this.name, await store.checkLease({ key: this.#leaseKey, leaseId: ask.leaseId }), this.guards);
  }

  /**
   * Answers a writer's ask (docs/cluster.md "The writer asks, the agent applies"): renders the asked
   * list from the public bucket (published before the ask), applies it while that writer's lease holds,
   * and records a proof naming the ask. An ask this server already answered is left as it is.
   */
  async #answer(ask: NodeAsk, on: { store: AuthorityStore; read: VersionedRecord | undefined; node: NodeRuntime; serverKey: string }): Promise<VersionedRecord | undefined> {
    if (this.#answered?.id === ask.id && this.#answered.serverKey === on.serverKey) return on.read;
    const { store } = on;
    const material = await this.#material.read(store.materialKv(this.cluster.replicas, { create: false }));
    const missing = ask.spaces.filter((s) => !material?.spaces.some((m) => m.name === s));
    if (!material || missing.length > 0) throw new CotalError("render-refused", `the writer's ask names ${missing.join(", ") || "tenants"} the published node material lacks: node ${this.name} cannot render it`, { next: `cotal --root ${shellWord(this.layout.root)} status   # the writer's reload publishes the material before its ask` });
    this.#known = material;
    const { text, digest } = renderNodeFrom(material, this.name, materialSpaces(material, ask.spaces), this.#local(), this.guards);
    this.onEvent(`cotal node: ${this.name}: applying the writer's ask (generation ${ask.generation}${ask.claim ? ", its claim" : ""}: ${ask.spaces.length} tenants)`);
    const fence = (): Promise<boolean> => this.#askStands(store, ask);
    const read = await this.#apply({ ...on, fence, signalledAt: 0 }, { serverKey: on.serverKey, digest }, text, ask);
    this.#answered = { id: ask.id, serverKey: on.serverKey };
    return read;
  }

  /** Takes the writer lease, waiting out a holder; a holder whose ask names this node is answered instead (it waits for this node). */
  async #leaseOrAsk(store: AuthorityStore): Promise<{ lease: Lease } | { ask: NodeAsk }> {
    const deadline = Date.now() + LEASE_WAIT_MS;
    for (;;) {
      try {
        return { lease: await store.acquireLease(this.#leaseKey, selfHolder(`cotal node run (${this.name})`), holderIsDead) };
      } catch (err) {
        if (!isCotalError(err, "lease-held") || Date.now() > deadline) throw err;
      }
      const ask = await this.#standingAsk(store);
      if (ask) return { ask };
      await new Promise((r) => setTimeout(r, ASK_POLL_MS));
    }
  }

  /** The apply's record step: a node that did not prove the list refuses; a proven one is remembered and its proof recorded. */
  async #recordApplied(at: AppliedOn, applied: { serverKey: string; digest: string }, verdict: ReloadVerdict, ask?: NodeAsk): Promise<VersionedRecord | undefined> {
    const { store, read, node, fence, signalledAt } = at;
    if (verdict.outcome !== "reloaded") {
      // The reason leads a request's tail and ends a signal's: both lines, once each.
      const lines = "logTail" in verdict ? verdict.logTail.trim().split("\n").filter(Boolean) : [];
      const why = [...new Set([lines[0], lines[lines.length - 1]])].filter(Boolean).join(" … ");
      throw new CotalError("reload-unproven", `node ${this.name} did not prove ${ask ? "the writer's asked list" : "the committed list"} (${verdict.outcome}${why ? `: ${why}` : ""})`, { next: `tail -n 40 ${node.logFile}   # the agent retries every round` });
    }
    this.applied++;
    this.#applied = applied;
    await store.settleAfterReload(signalledAt);
    const proof: Omit<NodeProof, "appliedGeneration"> = { configDigest: applied.digest, ...(verdict.serverConfigDigest ? { serverConfigDigest: verdict.serverConfigDigest } : {}), provenAt: new Date().toISOString() };
    if (ask) await this.#recordAskProof(store, ask, proof, fence);
    else if (read) await this.#recordProof(store, read, proof, fence);
    const now = await store.read();
    return now ? this.#withOwnProof(store, now) : read;
  }

  /** The answer to an ask, on this node's own key: of the ask's generation (its claim's, when it names one), naming the ask. */
  async #recordAskProof(store: AuthorityStore, ask: NodeAsk, proof: Omit<NodeProof, "appliedGeneration">, fence: () => Promise<boolean>): Promise<void> {
    if (!(await fence())) throw new CotalError("lease-lost", `the writer that asked node ${this.name} to apply lost its lease before the proof was recorded`, { next: `cotal node run --node ${this.name}   # the next round follows the record` });
    await writeAgentProof(store.proofsKv(this.cluster.replicas, { create: false }), agentProof(this.name, ask.generation, proof, ask.claim, ask.id));
  }

  /**
   * What this node may run now, rendered from the public bucket (docs/cluster.md "The public bucket,
   * and the agent renders from it") and what only this host holds, and whether the node must be applied.
   */
  async #plan(store: AuthorityStore, read: VersionedRecord, serverKey: string) {
    const spaces = nodeAllowedSpaces(read.record, this.guards);
    const material = await this.#material.read(store.materialKv(this.cluster.replicas, { create: false }));
    const publish = `cotal --root ${shellWord(this.layout.root)} up --detach   # on the control host: its cluster reload publishes the node material; this agent reads it again each round`;
    if (!material) throw new CotalError("render-refused", `the cluster's node material is not published yet: node ${this.name} renders its config from it`, { next: publish });
    this.#known = material;
    const missing = spaces.filter((s) => !material.spaces.some((m) => m.name === s));
    if (missing.length > 0) throw new CotalError("render-refused", `the record lists ${missing.join(", ")}, which the published node material lacks: node ${this.name} cannot render its config`, { next: publish });
    const { text, digest } = renderNodeFrom(material, this.name, materialSpaces(material, spaces), this.#local(), this.guards);
    const disk = readTextIfExists(this.layout.nodeServerConf(this.name));
    const seen: NodeObservation = {
      running: true,
      serverKey,
      ...(this.#seen ? { serverSeenAt: this.#seen.at } : {}),
      ...(disk !== undefined ? { diskDigest: configDigest(disk) } : {}),
      ...(this.#applied ? { applied: this.#applied } : {}),
    };
    return { text, digest, decision: nodeNeedsApply(read.record, this.name, digest, seen) };
  }

  /**
   * The proof, on this node's own key (docs/cluster.md "The agent's proof on its own key"), under the
   * lease: with nothing pending, of the committed generation; with a claim whose list is exactly what
   * the node now runs, of the claim (a partial proof); otherwise none (the node runs a list no
   * generation names). A generation that moved records nothing. The record is the writer's alone.
   */
  async #recordProof(store: AuthorityStore, read: VersionedRecord, proof: Omit<NodeProof, "appliedGeneration">, fence: () => Promise<boolean>): Promise<void> {
    const pending = read.record.pending;
    // The node runs exactly the claim's list, so its proof is of the claim's staged config.
    if (pending && !allowedIsClaimList(read.record, this.guards)) return;
    const cur = await store.read();
    if (!cur || cur.record.generation !== read.record.generation || cur.record.pending?.stagedDigest !== pending?.stagedDigest) return;
    if (!(await fence())) throw new CotalError("lease-lost", `the writer lease expired before node ${this.name}'s proof was recorded`, { next: `cotal node run --node ${this.name}   # the next round applies and proves again` });
    const mine = pending ? agentProof(this.name, pending.generation, proof, pending.stagedDigest) : agentProof(this.name, read.record.generation, proof);
    await writeAgentProof(store.proofsKv(this.cluster.replicas, { create: false }), mine);
  }

  /** The record as this node's own proof completes it: what it proved is judged from its key, not only from the writer's record. */
  async #withOwnProof(store: AuthorityStore, read: VersionedRecord): Promise<VersionedRecord> {
    const own = await readAgentProofs(store.proofsKv(this.cluster.replicas, { create: false }), [this.name]);
    return { ...read, record: withAgentProofs(read.record, own) };
  }

  /**
   * Serving only once the node serves every tenant stream it hosts (running, assigned, led), checked
   * once per server process: a restart whose streams JetStream left unassigned must not read as serving.
   */
  async #servingChecked(read: VersionedRecord, node: NodeRuntime, serverKey: string): Promise<Round> {
    if (this.#streamsServed !== serverKey) {
      const listed = new Set(nodeAllowedSpaces(read.record, this.guards));
      const tenants = (this.#known?.spaces ?? []).filter((s) => listed.has(s.name)).map((s) => ({ name: s.name, publicKey: s.publicKey }));
      const checks = await waitStreamsServed(this.layout, [node], tenants, this.#runtime()?.serverVersion ?? "0.0.0", STREAMS_SERVED_MS, this.#users()?.system);
      const check = checks[node.name];
      if (!served(check)) {
        // Unassigned or not running after the wait heals only by a restart, as `up` does it (boot-cluster.ts,
        // restartUnserving): stopped here, the next round starts it with every tenant held. A stream without
        // a leader is an election, left to run.
        const stuck = check !== undefined && "problems" in check && check.problems.some((p) => p.problem !== "no leader");
        if (stuck) {
          this.onEvent(`cotal node: ${this.name}: does not serve its tenant streams (${describeChecks(checks)}); restarting it with every tenant held`);
          await stopProcess(node.owner.pid, 10_000, () => !nodeAlive(node));
        }
        throw new CotalError("broker-start-failed", `node ${this.name} does not serve every tenant stream it hosts: ${describeChecks(checks)}${stuck ? "; restarted" : ""}`, {
          next: `cotal --root ${shellWord(this.layout.root)} up --detach   # restarts a node that does not serve its stored streams; this agent checks again each round`,
        });
      }
      this.#streamsServed = serverKey;
    }
    return this.#serving(read);
  }

  #serving(read: VersionedRecord): Round {
    const p = read.record.pending;
    return {
      state: "serving",
      generation: read.record.generation,
      ...(p ? { reason: `generation ${p.generation} is claimed and not committed: runs generation ${read.record.generation}${p.removes.length ? ` without ${p.removes.join(", ")}` : ""}`, next: "cotal up --detach   # completes or rolls back the claim on every node" } : {}),
    };
  }

  /** A node `cotal down` stopped: reported once, left down; `cotal up` clears the stop and the next round starts nothing (up did). */
  #keptDown(by: DownStop): Round {
    const reason = `stopped by ${by.purpose} at ${by.at}; this agent starts it again only after cotal up`;
    const next = `cotal --root ${shellWord(this.layout.root)} up --detach`;
    // `--once` exits non-zero: the node does not serve.
    return { state: "stopped", reason, next, error: new CotalError("broker-not-running", `node ${this.name} is ${reason}`, { next }) };
  }

  /** The way out while the record is unreadable: the agent retries; a quorum needs the other nodes up. */
  #retryNext(): string {
    const others = this.cluster.nodes.filter((n) => n.name !== this.name).map((n) => n.name);
    return `cotal status   # this agent retries every round; JetStream needs a quorum: start the other nodes (cotal node run --node ${others[0] ?? "<node>"}${others.length > 1 ? `, ... --node ${others[others.length - 1]}` : ""} on their hosts)`;
  }

  /** The node's state when the record could not be read or applied: maintenance if it runs no tenant, else stale. */
  #idleState(reason: string, next: string | undefined): Round {
    let maintenance = false;
    try {
      const disk = readTextIfExists(this.layout.nodeServerConf(this.name));
      maintenance = disk !== undefined && configDigest(disk) === this.#heldBoot().digest;
    } catch {
      // an unreadable root: say stale, the conservative word
    }
    return { state: maintenance ? "maintenance" : "stale", reason: maintenance ? `no tenant admitted: ${reason}` : `runs the last list applied to it, unconfirmed: ${reason}`, next: next ?? `cotal node run --node ${this.name}` };
  }

  /**
   * This node's boot with every tenant held, from the material last read (its held twins, signed on
   * the control host), else the material its directory was bundled with (a new cluster's first boot,
   * before any was published); an agent with neither renders it from the root's records on disk.
   */
  #heldBoot(): { text: string; digest: string } {
    const known = this.#known ?? readBundledMaterial(this.layout, this.name);
    return known ? renderNodeFrom(known, this.name, { held: materialHeld(known) }, this.#local(), this.guards) : renderNode(this.layout, this.name, [], { maintenance: true, guards: this.guards });
  }

  /**
   * The agent's own users when its host has them (docs/cluster.md "The agent's own users"): then it
   * reads no account seed of the root. Absent (a root made before them): the root's account records.
   */
  #users(): { authority: AgentUser; system: SystemUser } | undefined {
    const creds = readAgentCreds(this.layout, this.name);
    return creds ? { authority: { creds: creds.authority }, system: { creds: creds.system } } : undefined;
  }

  /**
   * The runtime as this node's host sees it: the node's own record beside it while its server lives
   * (docs/cluster.md "Each host's own runtime"), else the root's run/broker.json (a root made before).
   */
  #runtime(): BrokerRuntime | undefined {
    const own = readNodeRuntime(this.layout, this.name);
    const node = own?.nodes?.[0];
    return own && node && nodeAlive(node) ? own : readRuntime(this.layout);
  }

  /** What only this host holds for its node's render: store, log and pid paths, route TLS files, route password. */
  #local(): NodeLocal {
    return nodeLocalOf(this.layout, this.name, this.guards);
  }

  #report(round: Round): void {
    const line = `cotal node: ${this.name}: ${round.state}${round.generation !== undefined ? ` generation ${round.generation}` : ""}${round.reason ? `: ${round.reason}` : ""}${round.next ? `\n  next: ${round.next}` : ""}`;
    if (line === this.#last) return;
    this.#last = line;
    this.onEvent(line);
    try {
      writeNodeAgentState(this.layout, { node: this.name, pid: process.pid, state: round.state, ...pick(round) });
    } catch (err) {
      this.onEvent(`cotal node: ${this.name}: could not write ${this.layout.nodeAgentStateFile(this.name)}: ${(err as Error).message}`);
    }
  }

  /**
   * Starts this node with every tenant held when it does not run (invariant 3), under the maintenance
   * lock; a node `cotal down` stopped while this agent ran stays down until `cotal up` (broker/stop-intent.ts), and is
   * judged without the lock first, so an agent idling behind a `down` never holds up the `up`.
   */
  async #ensureRunning(): Promise<NodeRuntime | { stoppedBy: DownStop }> {
    const mine = (): NodeRuntime | undefined => this.#runtime()?.nodes?.find((n) => n.name === this.name);
    const cur = mine();
    if (cur && nodeAlive(cur)) return cur;
    await this.#dropStore();
    const kept = (): { stoppedBy: DownStop } | undefined => {
      // A stop from before this agent began is not its to keep: starting `cotal node run` asks for the node.
      const by = this.guards.DOWN_WITHOUT_STOP_INTENT ? undefined : downStopOf(this.layout, this.name);
      return by && Date.parse(by.at) >= this.#since ? { stoppedBy: by } : undefined;
    };
    const before = kept();
    if (before) return before;
    const lock = await waitForMaintenanceLock(this.layout.root, `cotal node run (${this.name}): start the node`, LOCK_WAIT_MS, this.guards);
    try {
      const under = kept();
      if (under) return under;
      const { prior, alive } = liveNodesOrRefuse(this.layout, this.guards);
      if (!alive.has(this.name)) {
        await this.#materialThroughOthers();
        this.onEvent(`cotal node: ${this.name}: not running; starting it with every tenant held (none admitted)`);
        await startClusterNodes(this.layout, this.settings, this.cluster, [this.self], { list: [], maintenance: true, alive, prior, guards: this.guards, render: () => this.#heldBoot().text });
        this.started++;
        this.#applied = undefined;
        this.#last = ""; // a restarted node's state is news even when it is the one reported before the stop
      }
    } finally {
      releaseMaintenanceLock(lock);
    }
    const now = mine();
    if (!now || !nodeAlive(now)) throw new CotalError("broker-start-failed", `node ${this.name} is not running after its start`, { next: `tail -n 40 ${this.layout.nodeLogFile(this.name)}` });
    return now;
  }

  /**
   * An agent that has read no material yet and finds its node down reads it through the other nodes,
   * so its held boot needs no tenant record of the root (docs/cluster.md "The public bucket, and the
   * agent renders from it"). None answering: the boot renders from the records on disk, and says so.
   */
  async #materialThroughOthers(): Promise<void> {
    // Material published before this node joined (cotal node add) cannot render it: read it again.
    if (this.#known?.cluster.nodes.some((n) => n.name === this.name)) return;
    const urls = this.cluster.nodes.filter((n) => n.name !== this.name).map((n) => `nats://${nodeHost(n, this.settings.host)}:${n.port}`);
    let store: AuthorityStore | undefined;
    try {
      store = await AuthorityStore.connect(urls, this.#users()?.authority ?? loadAuthorityAccount(this.layout), { name: `cotal node run (${this.name}, boot)`, replicas: this.cluster.replicas, timeoutMs: OTHERS_MS, guards: this.guards });
      this.#known = await this.#material.read(store.materialKv(this.cluster.replicas, { create: false }));
    } catch (err) {
      this.onEvent(`cotal node: ${this.name}: could not read the node material through ${urls.join(", ")} (${(err as Error).message}); its held boot renders from ${readBundledMaterial(this.layout, this.name) ? "the material its directory was bundled with" : "the root's records here"}`);
    } finally {
      await store?.close();
    }
    if (this.#known) this.onEvent(`cotal node: ${this.name}: read the node material through the other nodes (${this.#known.spaces.length} tenants) for its held boot`);
  }

  /** The replicated store through this node (one attempt a round), and a watch on the record key that wakes the loop. */
  async #connect(node: NodeRuntime): Promise<AuthorityStore> {
    if (this.#store) return this.#store;
    const user = this.#users()?.authority;
    const store = await connectReplicated(node.url, this.layout, this.cluster.replicas, this.guards, { timeoutMs: 0, name: `cotal node run (${this.name})`, connectTimeoutMs: 3_000, ...(user ? { user } : {}) });
    this.#store = store;
    try {
      this.#stopWatch = await store.watchRecord(() => {
        this.#changed = true;
        this.#wake?.();
      });
    } catch {
      // no watch: the periodic round still reads the record
    }
    return store;
  }

  async #dropStore(): Promise<void> {
    this.#stopWatch?.();
    this.#stopWatch = undefined;
    const s = this.#store;
    this.#store = undefined;
    await s?.close();
  }

  /** Until the interval passes, the record changes, or the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#changed) {
      this.#changed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#wake = undefined;
        this.#changed = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done);
      this.#wake = done;
    });
  }

  async close(): Promise<void> {
    await this.#dropStore();
  }
}

function pick(round: Round): Pick<NodeAgentResult, "generation" | "reason" | "next"> {
  return { ...(round.generation !== undefined ? { generation: round.generation } : {}), ...(round.reason ? { reason: round.reason } : {}), ...(round.next ? { next: round.next } : {}) };
}
