import { GUARDS_ON, type Guards } from "../guards.js";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RERUN, CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { assertSpaceName } from "../names.js";
import { brokerState } from "../broker/runtime.js";
import { pidAlive } from "../lock/process-identity.js";
import type { VersionedRecord } from "../inventory/authority-store.js";
import { listedOrClaimed } from "../inventory/record.js";
import { decideResume } from "../inventory/resume-decision.js";
import { deleteSpaceStreams } from "../provision/teardown-space.js";
import { awaitProvisioned } from "../provision/owed.js";
import type { EvictionResult } from "../broker/evict-connections.js";
import { evictEverywhere } from "../provision/evict-cluster.js";
import { preloadedAccounts } from "../render/preloaded-accounts.js";
import { deleteSpaceAccount, loadAuthorityAccount, loadSpaceAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { readTextIfExists } from "../root/secret-files.js";
import { digestOfServerConf } from "../saga/digest.js";
import { assertJournalAllows, clearJournal, writeJournal, type JournalPolicy, type SpaceRmEntry } from "../journal/journal.js";
import { runMutation, type MutationResult } from "../saga/mutation.js";
import { renderList } from "../saga/render-list.js";
import { openOfflineSession, unresponsiveBroker, type Session, type SessionHooks } from "../verb/session.js";
import { refuseOfflineOnCluster } from "../verb/cluster-offline.js";
import { withLiveVerb, withVerb, type VerbContext } from "../verb/verb.js";
import { clearKeyRotation, keyRotationFile } from "../root/key-rotation.js";

export interface SpaceRmOptions extends SessionHooks {
  root: string;
  name: string;
  lockWaitMs?: number;
}

export interface SpaceRmResult {
  space: string;
  outcome: "removed" | "absent";
  /** offline: the removal is promoted; the next `cotal up` boots and commits it. */
  brokerRunning: boolean;
  deletedStreams: string[];
  saga?: MutationResult;
  eviction?: EvictionResult;
  reaped: string[];
  notes: string[];
}

/** Live pids recorded under space.<hex>/run/*.pid: a tenant's daemons must be stopped before its removal. */
export function liveSpaceProcesses(layout: RootLayout, space: string): { pid: number; file: string }[] {
  const dir = layout.spaceRunDir(space);
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".pid"));
  } catch {
    return [];
  }
  const live: { pid: number; file: string }[] = [];
  for (const f of files) {
    const pid = Number(readFileSync(join(dir, f), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) live.push({ pid, file: join(dir, f) });
  }
  return live;
}

/** Each removal is attempted and reported; a throw here would wedge the journal forever. */
function reapSpaceMaterial(layout: RootLayout, space: string): { reaped: string[]; failures: { path: string; error: string }[] } {
  const reaped: string[] = [];
  const failures: { path: string; error: string }[] = [];
  for (const [path, fn] of [
    [layout.accountFile(space), () => deleteSpaceAccount(layout, space)],
    [layout.spaceDir(space), () => rmSync(layout.spaceDir(space), { recursive: true, force: true })],
    // a rotation staged for the removed account holds its new signing seed (docs/commands/space.md)
    [keyRotationFile(layout, space), () => clearKeyRotation(layout, space)],
  ] as const) {
    try {
      fn();
      reaped.push(path);
    } catch (err) {
      failures.push({ path, error: (err as Error).message });
    }
  }
  return { reaped, failures };
}

/** The record's pending claim is this one removal, promoted (or proven) but not committed: only a boot commits it. */
export function ownPromotedRemoval(current: VersionedRecord, space: string, serverConfDigest: string | undefined): boolean {
  const p = current.record.pending;
  if (!p || p.op !== "remove" || p.adds.length > 0 || p.removes.length !== 1 || p.removes[0] !== space) return false;
  const action = decideResume(current.record, serverConfDigest).action;
  return action === "complete-forward" || action === "commit-only";
}

function preloadedByConfig(layout: RootLayout, account: AccountRecord): boolean {
  return preloadedAccounts(readTextIfExists(layout.serverConf) ?? "").includes(account.publicKey);
}

/**
 * Before the journal is written (the removal's first durable step): refusals that would otherwise
 * strand a journal the operator cannot finish. Nothing is written when one fires.
 */
function refuseBeforeJournal(layout: RootLayout, space: string, current: VersionedRecord, running: boolean, guards: Guards): void {
  const listed = current.record.spaces;
  if (listed.includes(space) && listed.length === 1) {
    throw new CotalError("invalid-argument", `space ${space} is the last tenant of this broker; removing it would leave a config with zero spaces`, {
      next: "to tear the whole broker down: cotal down, then delete the root directory",
    });
  }
  const d = decideResume(current.record, digestOfServerConf(layout));
  if (d.action === "refuse") {
    throw new CotalError("resume-refused", `the inventory is in a state no crash of a cooperative writer leaves (${d.why}); a removal started now could not finish`, {
      next: `cotal broker reconcile   # then re-run cotal space rm ${space} --yes`,
      details: { record: current.record },
    });
  }
  if (!running && (d.action === "complete-forward" || d.action === "commit-only")) {
    throw new CotalError("resume-refused", `an interrupted mutation was promoted while the broker was stopped; only booting it can prove it`, {
      next: `cotal up   # boots and commits it; then cotal space rm ${space} --yes`,
    });
  }
  // Everything the saga needs after the point of no return is checked now: the config without this
  // space must render (every other listed tenant's record readable), or the streams would go and the
  // render refuse with the removal journaled (issue #28 finding 4).
  if (!guards.RM_SKIP_RENDER_CHECK) renderList(layout, listed.filter((s) => s !== space), guards);
}

interface RemovalSteps {
  v: VerbContext;
  space: string;
  session: Session;
  running: boolean;
  /** The read the saga decides on (live: made before the lock). */
  decided?: VersionedRecord;
  notes: string[];
  /** How long to wait for a committed add still provisioning this space. */
  waitMs: number;
  onNotice?: (message: string) => void;
}

/**
 * docs/lifecycle.md, from whatever state the last attempt was cut in: journal → delete streams (the point of
 * no return) → saga → reap → clear. Everything it needs after the point of no return is loaded first.
 */
async function runRemoval({ v, space, session, running, decided, notes, waitMs, onNotice }: RemovalSteps): Promise<SpaceRmResult> {
  const { layout, lock, guards } = v;
  loadBrokerTrust(layout); // a corrupt broker.json refuses here, before any stream is deleted
  loadAuthorityAccount(layout);
  const account = loadSpaceAccount(layout, space);
  const current = (await session.store.read()) ?? undefined;
  if (!current) {
    throw new CotalError("inventory-unreachable", "the broker's inventory record cannot be read; a removal decided without it would be a guess", { next: "cotal status   # then cotal up" });
  }
  let entry: SpaceRmEntry | undefined = v.journal?.op === "space-rm" ? v.journal : undefined;
  if (!entry) {
    const listed = listedOrClaimed(current.record).has(space);
    if (!listed && !account) return { space, outcome: "absent", brokerRunning: running, deletedStreams: [], reaped: [], notes };
    refuseBeforeJournal(layout, space, current, running, guards);
    const live = liveSpaceProcesses(layout, space);
    if (live.length > 0) {
      throw new CotalError("live-process", `space ${space} still has live processes: ${live.map((p) => `pid ${p.pid} (${p.file})`).join(", ")}`, {
        next: `stop ${live.map((p) => `pid ${p.pid}`).join(", ")}, then re-run \`cotal space rm ${space} --yes\``,
      });
    }
    // A `space add` that committed this space may still be creating its streams after releasing the
    // lock: deleting them first would let that creation land after our deletion and outlive the
    // removal. Nobody starts to owe it while we hold the lock, so waiting once is enough (docs/saga.md).
    if (!guards.RM_DURING_PROVISIONING) await awaitProvisioned(layout, space, waitMs, onNotice);
    entry = { op: "space-rm", space, startedAt: new Date().toISOString() };
    writeJournal(layout, lock, entry);
    await failpoint("rm-journaled");
  } else {
    notes.push(`finishing the removal of ${space} started ${entry.startedAt}`);
  }

  let deletedStreams: string[] = [];
  if (!entry.streamsDeleted) {
    if (account && (running ? preloadedByConfig(layout, account) : true)) {
      deletedStreams = await deleteSpaceStreams(session.url, account).catch((err: unknown) => {
        // A stopped node may hold the streams: name it, with the line that continues it (issue #28 finding 3).
        const stopped = session.runtime ? unresponsiveBroker(session.runtime, err) : undefined;
        throw stopped ? new CotalError("broker-unreachable", `deleting the streams of space ${space} failed (${(err as Error).message}): ${stopped.message.replace(/; nothing was changed$/, "")}; the removal is journaled and re-running it continues it`, { next: stopped.next ?? RERUN, cause: err }) : err;
      }); // the point of no return
    } else if (account) {
      notes.push(`the running config no longer preloads ${space}, so nothing can reach its streams; they stay in the store`);
    }
    entry = { ...entry, streamsDeleted: true };
    writeJournal(layout, lock, entry);
    await failpoint("rm-streams-deleted");
  }

  // Offline, this removal's own claim already promoted (a crash after its rename) is where an offline
  // removal ends anyway: the saga could only refuse into `cotal up`, which waits on this journal (docs/resume.md).
  const promoted = !running && ownPromotedRemoval(current, space, digestOfServerConf(layout));
  // An unresumable record refuses here with `cotal broker reconcile`, which a removal journal lets
  // through for exactly that state, never re-admitting this space (docs/refusals.md).
  const saga = promoted ? undefined : await runMutation(session.envWith(lock), { op: "remove", removes: [space], verb: `space rm ${space}` }, decided);
  // Connections the reload did not drop are cut at once where the server can (never throws).
  const eviction = account && session.runtime ? await evictEverywhere(layout, session.runtime, account.publicKey, guards) : undefined;
  const { reaped, failures } = reapSpaceMaterial(layout, space);
  clearJournal(layout, lock);
  if (!running) notes.push("the broker is stopped: the removal is promoted; `cotal up` boots and commits it");
  if (failures.length > 0) {
    throw new CotalError("reap-incomplete", `space ${space} was removed from the broker, but some of its local material could not be deleted:\n${failures.map((f) => `  ${f.path}: ${f.error}`).join("\n")}`, {
      next: `rm -rf ${failures.map((f) => JSON.stringify(f.path)).join(" ")}`,
      details: { failures, reaped, deletedStreams, generation: saga?.generation ?? current.record.pending?.generation },
    });
  }
  return { space, outcome: "removed", brokerRunning: running, deletedStreams, ...(saga ? { saga } : {}), ...(eviction ? { eviction } : {}), reaped, notes };
}

/**
 * `cotal space rm`: on a running broker through its session, on a stopped one through a private
 * broker on the store, so re-running an interrupted removal always finishes it (docs/refusals.md).
 */
export async function spaceRm(opts: SpaceRmOptions): Promise<SpaceRmResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const space = assertSpaceName(opts.name, guards);
  const layout = new RootLayout(canonicalRoot(opts.root));
  const journal: JournalPolicy = { verb: "space rm", space, says: `space rm ${space}` };
  const base = { ...opts, guards, root: layout.root, purpose: `cotal space rm ${space}`, journal, lockWaitMs: opts.lockWaitMs ?? 30_000 };
  const notes: string[] = [];
  if (brokerState(layout).running) {
    return withLiveVerb(base, (v) => runRemoval({ v, space, session: v.session, running: true, decided: v.decided, notes, waitMs: base.lockWaitMs, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) }));
  }
  refuseOfflineOnCluster(layout, guards, `space rm ${space}`, "needs the running cluster (an offline removal deletes the tenant's streams through a private broker on the store)");
  assertJournalAllows(layout, journal, guards);
  return withVerb(base, async (v) => {
    if (brokerState(layout).running) {
      throw new CotalError("broker-running", "the broker started while this removal waited for the lock", { next: `cotal space rm ${space} --yes` });
    }
    const entry = v.journal?.op === "space-rm" ? v.journal : undefined;
    const account = loadSpaceAccount(layout, space);
    // Only a removal that still has to delete streams preloads the tenant, and only before its commit.
    const preload = account && !entry?.streamsDeleted ? [account] : [];
    const session = await openOfflineSession(layout, `space rm ${space}`, base, preload);
    try {
      return await runRemoval({ v, space, session, running: false, notes, waitMs: base.lockWaitMs, ...(opts.onNotice ? { onNotice: opts.onNotice } : {}) });
    } finally {
      await session.close();
    }
  });
}
