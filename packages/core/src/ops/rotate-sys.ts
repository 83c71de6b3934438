import { GUARDS_ON, type Guards } from "../guards.js";
import { rmSync } from "node:fs";
import { CotalError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { brokerState } from "../broker/runtime.js";
import { ensureEvictorCreds } from "../broker/evict-connections.js";
import { loadBrokerTrust, replaceBrokerTrust } from "../root/broker-store.js";
import { parseBrokerRecord } from "../root/records.js";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";
import { rotateSystemAccount, type BrokerTrust } from "../trust/index.js";
import { withLease } from "../saga/lease-holder.js";
import { clearJournal, writeJournal, type RotationEntry } from "../journal/journal.js";
import { writeObserverCreds } from "../saga/materialise.js";
import { openOfflineSession, leaseKeyFor } from "../verb/session.js";
import { withVerb } from "../verb/verb.js";
import { isClusterRoot, loadSettings } from "../root/settings.js";
import { serversOfRoot } from "../broker/server-scan.js";
import { carryRaftState } from "../broker/raft-state.js";
import { clusterOf } from "../root/cluster-settings.js";

export interface RotateSysResult {
  root: string;
  generation: number;
  systemAccount: string;
  retiredSystemAccount: string;
  reminted: string[];
  /** The cluster nodes whose raft state this run carried to the new system account's directory (broker/raft-state.ts). */
  carried?: string[];
  /** True when this run finished a rotation an earlier run was cut short in. */
  resumed: boolean;
  warning: string;
}

/** The staged successor, checked against the live record: same operator, exactly one generation on. */
function stagedSuccessor(layout: RootLayout, entry: RotationEntry): BrokerTrust {
  const text = readTextIfExists(layout.successorTrustFile);
  const live = parseBrokerRecord(readTextIfExists(layout.brokerFile) ?? "");
  let next: BrokerTrust | undefined;
  try {
    next = text === undefined ? undefined : (JSON.parse(text) as BrokerTrust);
  } catch {
    next = undefined;
  }
  const ok = next && typeof live === "object" && next.generation === entry.generation && next.operator.publicKey === live.operator.publicKey && (live.generation === next.generation - 1 || live.generation === next.generation);
  if (!next || !ok) {
    throw new CotalError("corrupt-record", `the rotation to generation ${entry.generation} has no usable staged successor at ${layout.successorTrustFile}`, {
      next: `restore ${layout.brokerFile} and ${layout.brokerSecretsDir} from a backup; the journal ${layout.journalFile} names the rotation`,
    });
  }
  return next;
}

/** Seed, then record (docs/resume.md): re-applying the same successor is idempotent. */
function applySuccessor(layout: RootLayout, next: BrokerTrust): void {
  const live = parseBrokerRecord(readTextIfExists(layout.brokerFile) ?? "");
  if (typeof live === "object" && live.generation === next.generation && live.system.publicKey === next.system.publicKey) return; // already applied
  // The live record still names the retired account; its signing seed may already be the new one.
  const retired = typeof live === "object" ? live : undefined;
  if (!retired) throw new CotalError("corrupt-record", `${layout.brokerFile} is unusable mid-rotation`, { next: `restore ${layout.brokerFile} from a backup` });
  replaceBrokerTrust(layout, { operator: next.operator, system: { publicKey: retired.system.publicKey, jwt: retired.system.jwt, signingKey: retired.system.signingKey }, generation: retired.generation, createdAt: retired.createdAt, multiSpace: retired.multiSpace }, next);
}

/** Every node of a cluster root whose store is on this disk: its raft groups moved to the new system account's directory. */
function carryClusterRaftState(layout: RootLayout, from: string, to: string): string[] {
  const cluster = clusterOf(layout, loadSettings(layout));
  return cluster ? carryRaftState(layout, cluster.nodes.map((n) => n.name), from, to) : [];
}

/**
 * Broker-wide system-account rotation (docs/lifecycle.md), offline and resumable: the successor trust is
 * staged and journaled before any live trust file changes; then seed, record, and every $SYS cred
 * re-minted; the journal clears last. Every other verb refuses while it stands (docs/refusals.md).
 */
export async function rotateSys(opts: { root: string; guards?: Guards }): Promise<RotateSysResult> {
  return withVerb({ root: opts.root, guards: opts.guards ?? GUARDS_ON, purpose: "cotal up --rotate-sys", journal: { verb: "up --rotate-sys" }, lockWaitMs: 30_000 }, async ({ layout, guards, lock, disk: spaces, journal }) => {
    // On a cluster root every node must be down, not only the first one `brokerState` reads.
    const nodesUp = guards.ROTATE_WITH_NODES_UP ? [] : serversOfRoot(layout, guards).filter((p) => p.role === "node");
    if (brokerState(layout).running || nodesUp.length > 0) {
      throw new CotalError("broker-running", `rotating the system account needs the broker stopped: every tenant's $SYS creds change at once${nodesUp.length > 0 ? ` (cluster nodes still run: ${nodesUp.map((p) => `pid ${p.pid} (${p.config})`).join(", ")})` : ""}`, {
        next: "cotal down && cotal up --rotate-sys",
        ...(nodesUp.length > 0 ? { details: { nodes: nodesUp } } : {}),
      });
    }
    let entry = journal?.op === "rotate-sys" ? journal : undefined;
    const resumed = entry !== undefined;
    const before = parseBrokerRecord(readTextIfExists(layout.brokerFile) ?? "");
    // A rotation cut between seed and record leaves trust a private broker cannot load: finish
    // applying the staged successor first, then take the lease for the rest.
    if (entry) applySuccessor(layout, stagedSuccessor(layout, entry));
    const current = loadBrokerTrust(layout);
    const rotate = async (): Promise<RotateSysResult> => {
      let retired = entry?.retired ?? (typeof before === "object" && before.generation < current.generation ? before.system.publicKey : current.system.publicKey);
      if (!entry) {
        const next = rotateSystemAccount(current);
        writeJsonAtomic(layout.successorTrustFile, next);
        entry = { op: "rotate-sys", generation: next.generation, startedAt: new Date().toISOString(), retired: current.system.publicKey };
        writeJournal(layout, lock, entry);
        await failpoint("rotate-journaled");
        replaceBrokerTrust(layout, current, next);
        retired = current.system.publicKey;
      }
      await failpoint("rotate-applied");
      const rotated = loadBrokerTrust(layout);
      for (const s of spaces) {
        rmSync(layout.sysCredsFile(s.name, "observer"), { force: true });
        writeObserverCreds(layout, rotated, s.name, guards);
      }
      ensureEvictorCreds(layout, rotated);
      // A cluster's raft groups live under the system account's name: carried over before any node boots (broker/raft-state.ts).
      const carried = guards.ROTATE_STRANDS_RAFT ? [] : carryClusterRaftState(layout, retired, rotated.system.publicKey);
      await failpoint("rotate-carried");
      clearJournal(layout, lock);
      rmSync(layout.successorTrustFile, { force: true });
      return {
        root: layout.root,
        generation: rotated.generation,
        systemAccount: rotated.system.publicKey,
        retiredSystemAccount: retired,
        reminted: spaces.map((s) => s.name),
        ...(carried.length > 0 ? { carried } : {}),
        resumed,
        warning: "full backups taken against the retired system-account chain no longer restore; retired $SYS creds stop connecting once the broker loads the new config",
      };
    };
    // A cluster root: no private broker (its store is no node's: a phantom lease). With every node
    // stopped nobody can hold or take the lease in the R3 bucket, and the lock we hold keeps `up` out
    // until the rotation is done; every node then boots on the new system account (docs/cluster.md).
    if (isClusterRoot(layout)) return rotate();
    const session = await openOfflineSession(layout, "up --rotate-sys", { guards });
    try {
      return await withLease(session.store, leaseKeyFor(layout), "up --rotate-sys", rotate);
    } finally {
      await session.close();
    }
  });
}
