import { GUARDS_ON, type Guards } from "../guards.js";
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterPid, CotalError } from "../errors.js";
import { connectAsAccount } from "../broker/connect.js";
import { serversOfRoot } from "../broker/server-scan.js";
import { stopProcess } from "../broker/stop-process.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { withVerb } from "../verb/verb.js";
import { ownerStatus, pidAlive, selfOwner } from "../lock/process-identity.js";
import { loadSpaceAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { attemptWorkDir, readCut, writeJournal, type AttemptClaim, type OwnedPath } from "../journal/journal.js";
import { removeProvenPath } from "./attempt.js";
import { startPrivateBroker } from "../broker/private-broker.js";

export interface CleanAttemptResult {
  attemptId: string;
  outcome: "cleaned" | "absent";
  removed: string[];
  killed: number[];
  deletedStreams: string[];
}

/** A journaled private broker is ours to kill only while it still runs a config from the attempt's work dir. */
function servesAttempt(pid: number, workDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").some((a) => a.startsWith(workDir));
  } catch {
    return false;
  }
}

async function killBrokers(layout: RootLayout, claim: AttemptClaim, workDir: string, guards: Guards): Promise<number[]> {
  const killed: number[] = [];
  for (const b of claim.brokers) {
    if (ownerStatus(b) !== "alive" || !servesAttempt(b.pid, workDir)) continue;
    process.kill(b.pid, "SIGKILL");
    const deadline = Date.now() + 10_000;
    while (pidAlive(b.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    killed.push(b.pid);
  }
  // A verb killed between spawning its private broker and journaling it leaves one the claim does
  // not name; /proc still shows it reading a config from this attempt's work dir.
  for (const srv of serversOfRoot(layout, guards).filter((x) => x.role === "attempt" && x.config.startsWith(`${workDir}/`) && !killed.includes(x.pid))) {
    await stopProcess(srv.pid, 0);
    killed.push(srv.pid);
  }
  return killed;
}

/**
 * Removes only what the claim proves this attempt made: private brokers still serving its work dir,
 * paths whose inode matches the journaled one, and (restore target pass) the streams it journaled
 * before installing them. Any unproven path keeps the claim, so ownership is never surrendered blind.
 */
export async function recoverAttempt(layout: RootLayout, lock: MaintenanceLock, claim: AttemptClaim, guards: Guards): Promise<CleanAttemptResult> {
  const workDir = attemptWorkDir(layout, claim.id);
  const killed = await killBrokers(layout, claim, workDir, guards);
  let deletedStreams: string[] = [];
  const installed = claim.installed ?? [];
  if (installed.length > 0) {
    const account = loadSpaceAccount(layout, claim.space);
    if (account) {
      // The real store, through a private broker that loads only this space: delete what we installed.
      const broker = await startPrivateBroker(layout, { storeDir: layout.storeDir, workDir, spaces: [account], label: "clean", guards });
      try {
        const nc = await connectAsAccount(broker.url, account, { name: `cotal-clean-${claim.space}`, reconnect: false });
        try {
          const jsm = await jetstreamManager(nc);
          const present: string[] = [];
          for await (const n of jsm.streams.names()) present.push(n);
          deletedStreams = installed.filter((n) => present.includes(n));
          for (const n of deletedStreams) await jsm.streams.delete(n);
        } finally {
          await nc.close();
        }
      } finally {
        await broker.stop();
      }
    }
  }
  const removed: string[] = [];
  const unproven: OwnedPath[] = [];
  for (const p of claim.paths) {
    const r = removeProvenPath(p);
    if (r === "removed") removed.push(p.path);
    if (r === "unproven") unproven.push(p);
  }
  const cut = readCut(layout);
  if (unproven.length > 0) {
    if (cut?.attempt?.id === claim.id) writeJournal(layout, lock, { ...cut, attempt: { ...claim, installed: [], brokers: [] } });
    throw new CotalError("attempt-pending", `attempt ${claim.id} residue cannot be proven its own: ${unproven.map((p) => p.path).join(", ")}; the claim is kept`, {
      next: `inspect and remove ${unproven.map((p) => p.path).join(" ")} by hand, then: cotal clean restore-attempt --attempt ${claim.id}`,
      details: { unproven },
    });
  }
  if (cut?.attempt?.id === claim.id) {
    const { attempt: _a, ...rest } = cut;
    writeJournal(layout, lock, rest);
  }
  return { attemptId: claim.id, outcome: "cleaned", removed, killed, deletedStreams };
}

/** `cotal clean restore-attempt --attempt ID`: recovery of a dead backup/restore attempt. */
export async function cleanRestoreAttempt(opts: { root: string; attempt: string; lockWaitMs?: number; guards?: Guards }): Promise<CleanAttemptResult> {
  // The one preamble (verb/verb.ts): the lock, leaked brokers reaped (never the journaled attempt's), the journal.
  const verb = { root: opts.root, guards: opts.guards ?? GUARDS_ON, purpose: `cotal clean restore-attempt ${opts.attempt}`, journal: { verb: "clean restore-attempt" as const }, lockWaitMs: opts.lockWaitMs ?? 30_000, certain: false };
  return withVerb(verb, async ({ layout, lock, guards }) => {
    const claim = readCut(layout)?.attempt;
    if (!claim || claim.id !== opts.attempt) return { attemptId: opts.attempt, outcome: "absent", removed: [], killed: [], deletedStreams: [] };
    const me = selfOwner();
    if (claim.owner.pid !== me.pid && ownerStatus(claim.owner) !== "dead") {
      throw new CotalError("attempt-pending", `attempt ${claim.id} is owned by live pid ${claim.owner.pid}`, { next: afterPid(claim.owner.pid) });
    }
    return await recoverAttempt(layout, lock, claim, guards);
  });
}
