import type { InventoryRecord } from "./record.js";

/**
 * What a writer holding the lease must do with the record it read: the crash-resume table of
 * docs/resume.md, as a pure function of (record, sha256 of server.conf). It never asks whether the
 * pending claim "matches disk": disk says nothing about which generation the broker runs.
 */
export type ResumeDecision =
  | { action: "fresh" }
  | { action: "rollback-unstaged"; why: string }
  | { action: "rollback-staged"; why: string }
  | { action: "complete-forward"; why: string }
  | { action: "commit-only"; why: string }
  | { action: "refuse"; why: string };

export type ResumeAction = ResumeDecision["action"];

export function decideResume(record: InventoryRecord, serverConfDigest: string | undefined): ResumeDecision {
  const { generation, appliedGeneration, pending } = record;
  if (pending === null) {
    if (appliedGeneration === generation) return { action: "fresh" };
    return { action: "refuse", why: `no mutation is pending, yet appliedGeneration ${appliedGeneration} differs from generation ${generation}` };
  }
  if (pending.generation !== generation + 1) {
    return { action: "refuse", why: `pending claims generation ${pending.generation}, which does not follow the committed ${generation}` };
  }
  if (appliedGeneration === generation + 1) {
    // Proven, not committed: the broker serves g+1, so the only exit is forward.
    if (serverConfDigest !== undefined && serverConfDigest === record.configDigest) {
      return { action: "commit-only", why: `generation ${pending.generation} was proven on the running broker but never committed` };
    }
    return { action: "refuse", why: "generation was proven, but server.conf no longer holds the proven bytes: something outside the saga promoted a config" };
  }
  if (appliedGeneration !== generation) {
    return { action: "refuse", why: `appliedGeneration ${appliedGeneration} is neither the committed ${generation} nor the pending ${pending.generation}` };
  }
  // Forward first: when the staged bytes are live (even if identical to the old ones), completing is always safe.
  if (pending.stagedDigest !== undefined && serverConfDigest !== undefined && serverConfDigest === pending.stagedDigest) {
    return { action: "complete-forward", why: "the staged config was promoted but its reload was never proven (PROMOTED-BUT-UNCOMMITTED)" };
  }
  // A rollback is safe only where server.conf provably still holds the committed bytes. Anything
  // else (a KV that lost its last writes, a hand edit) is a config nobody vouches for: refuse.
  if (serverConfDigest === undefined || serverConfDigest !== record.configDigest) {
    return {
      action: "refuse",
      why: `server.conf (${serverConfDigest ?? "missing"}) is neither the committed config (${record.configDigest ?? "none"})${pending.stagedDigest ? ` nor the staged one (${pending.stagedDigest})` : " and nothing was staged"}`,
    };
  }
  if (pending.stagedDigest === undefined) {
    return { action: "rollback-unstaged", why: "the previous writer died before staging; nothing was promoted" };
  }
  return { action: "rollback-staged", why: "the config was staged but never promoted; the broker still runs the committed bytes" };
}
