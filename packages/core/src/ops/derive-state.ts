import { diffLists, type InventoryRecord } from "../inventory/record.js";
import { decideResume } from "../inventory/resume-decision.js";

/** The operator-facing state, in the torn-write vocabulary of the inventory design (docs/vocabulary.md). */
export type DerivedState =
  | "absent"
  | "uncertain"
  | "stopped"
  | "clean"
  | "PENDING"
  | "PROMOTED-BUT-UNCOMMITTED"
  | "PROVEN-BUT-UNCOMMITTED"
  | "UNPROVEN RELOAD"
  | "SILENT EVICTION"
  | "RESURRECTION RISK"
  | "UNRESUMABLE"
  | "BLOCKED"
  | "UNREACHABLE"
  | "DEGRADED"
  | "divergence";

export interface StateInput {
  exists: boolean;
  corrupt: number;
  running: boolean;
  record?: InventoryRecord;
  diskNames: readonly string[];
  /** Names of disk tenants whose account the current server.conf preloads. */
  preloadedNames: readonly string[];
  /** Preloaded accounts no record vouches for. */
  unknownPreloads: number;
  serverConfDigest?: string;
  /** The broker's process runs but cannot answer (stopped by SIGSTOP): the caller's words. */
  unreachable?: string;
  /** What refuses every mutating verb now and its owner is gone (a standing journal entry, a dead lock holder): the caller's words. */
  blocked?: string;
  /** Cluster nodes whose own state is not clean (ops/cluster-status.ts), "name: state" each. */
  degradedNodes?: readonly string[];
}

/** Pure: the first matching condition wins, most dangerous first. */
export function deriveState(i: StateInput): { state: DerivedState; why: string } {
  if (!i.exists) return { state: "absent", why: "no root here" };
  if (i.corrupt > 0) return { state: "uncertain", why: `${i.corrupt} unreadable record(s): the tenant count is unknown` };
  if (i.running && i.unreachable) return { state: "UNREACHABLE", why: i.unreachable };
  const r = i.record;
  // The label of a torn record is the resume decision the saga would execute on it, never a guess of its own.
  const d = r ? decideResume(r, i.serverConfDigest) : undefined;
  if (r?.pending && d) {
    const p = r.pending;
    switch (d.action) {
      case "commit-only":
        return { state: "PROVEN-BUT-UNCOMMITTED", why: `generation ${p.generation} was proven but not committed; the next writer commits it` };
      case "complete-forward":
        return { state: "PROMOTED-BUT-UNCOMMITTED", why: `server.conf holds generation ${p.generation}'s bytes, never proven; the next writer completes forward` };
      case "rollback-staged":
      case "rollback-unstaged":
        return { state: "PENDING", why: `a ${p.op} claimed generation ${p.generation} (${p.writer}) and has not promoted; the next writer rolls it back` };
      default:
        return { state: "UNRESUMABLE", why: `${d.action === "refuse" ? d.why : "no rule applies"}; every writer refuses: cotal broker reconcile` };
    }
  }
  if (r && d?.action === "refuse") return { state: "UNPROVEN RELOAD", why: `generation ${r.generation} committed, ${r.appliedGeneration} proven; every writer refuses: cotal broker reconcile` };
  // A standing entry explains what follows it (a removal's divergence, a quiesced tenant): it is named first.
  if (i.blocked) return { state: "BLOCKED", why: i.blocked };
  if (i.running) {
    const onDisk = new Set(i.diskNames);
    const preloaded = new Set(i.preloadedNames); // Sets: linear at 10,000 tenants
    const evicted = (r ? r.spaces.filter((s) => onDisk.has(s)) : i.diskNames).filter((s) => !preloaded.has(s));
    if (evicted.length > 0) return { state: "SILENT EVICTION", why: `not preloaded by the running config: ${evicted.join(", ")}` };
    if (i.unknownPreloads > 0) return { state: "RESURRECTION RISK", why: `${i.unknownPreloads} preloaded account(s) that no record vouches for` };
  }
  if (r) {
    const { diskOnly, kvOnly } = diffLists(i.diskNames, r);
    if (diskOnly.length + kvOnly.length > 0) return { state: "divergence", why: `disk-only: [${diskOnly.join(", ")}], kv-only: [${kvOnly.join(", ")}]` };
    if (i.running && r.configDigest !== null && i.serverConfDigest !== r.configDigest) {
      return { state: "UNPROVEN RELOAD", why: "server.conf is not the config proven at the applied generation" };
    }
  }
  if (!i.running) return { state: "stopped", why: "the broker is not running" };
  if (i.degradedNodes && i.degradedNodes.length > 0) return { state: "DEGRADED", why: `node${i.degradedNodes.length > 1 ? "s" : ""} ${i.degradedNodes.join(", ")}` };
  return { state: "clean", why: r ? `generation ${r.generation}, proven and committed` : "the running config preloads every tenant on disk" };
}
