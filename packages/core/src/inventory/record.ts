import { isValidSpaceName } from "../names.js";

export type MutationOp = "add" | "remove" | "reconcile" | "batch" | "limits" | "revoke" | "rotate-key";

/**
 * A `space limits` claim: the account JWT on disk before and after (public material). A rollback
 * writes `from` back into the record; completing forward keeps `to` (saga/limits-record.ts).
 */
export interface LimitsChange {
  space: string;
  from: string;
  to: string;
}

/** The in-flight claim (docs/saga.md, step 3): durable from step 3 until the step-8 commit clears it. */
export interface PendingMutation {
  /** g+1: the generation this mutation commits. */
  generation: number;
  op: MutationOp;
  /** Names the committed list does not hold yet (sorted). */
  adds: string[];
  /** Names the committed list holds and the commit drops (sorted). */
  removes: string[];
  /** Who claimed it, for the operator's message: "pid@host (verb)". */
  writer: string;
  /** The lease value the writer held; steps 5-7 re-check this exact id. */
  leaseId: string;
  claimedAt: string;
  /** sha256 of server.conf.<g+1>, recorded at step 5 before any promotion. */
  stagedDigest?: string;
  /** reconcile --adopt-kv: the disk records this mutation deliberately stops preloading. */
  excluded?: string[];
  /**
   * The adds whose account record did not exist when the claim was made: the only records a
   * rollback of this claim may delete (docs/resume.md). A reused record is never deleted.
   */
  mints?: string[];
  /** op "limits", "revoke" (a user revocation, ops/space-revoke.ts) and "rotate-key" (a signing key added or removed, ops/space-rotate-key.ts) only: the one space whose account JWT this mutation re-signs. */
  limits?: LimitsChange;
  /**
   * A cluster root only: the nodes that proved this claim's config while another node could not
   * (docs/cluster.md "Partial proofs"). Part of the claim, so a rollback or a replacement drops them.
   */
  proven?: Record<string, NodeProof>;
}

export interface ServerConfigDigest {
  digest: string;
  forConfigDigest: string;
}

/** One cluster node's own proof (docs/cluster.md "The record"): what that server was proven to load. */
export interface NodeProof {
  appliedGeneration: number;
  /** sha256 of that node's own server.conf bytes. */
  configDigest: string;
  /** The node's own `config_digest` (2.11+), read with the proof. */
  serverConfigDigest?: string;
  provenAt: string;
}

/** The single `inventory` key of `cotal_broker_inventory`. */
export interface InventoryRecord {
  /** Last COMMITTED generation: the CAS subject. Not a count of anything. */
  generation: number;
  spaces: string[];
  /** Generation the running broker's config was PROVEN (from its log) to carry. */
  appliedGeneration: number;
  /** Digest of the server.conf bytes proven at appliedGeneration. */
  configDigest: string | null;
  pending: PendingMutation | null;
  /**
   * The server's own `config_digest` (2.11+, read after a proven reload), with the byte digest it was
   * read for: it describes the running config only while `forConfigDigest === configDigest`.
   */
  serverConfigDigest?: ServerConfigDigest;
  /**
   * Records on disk an operator chose not to preload (`reconcile --adopt-kv`). They are not a
   * divergence; `space add <name>` re-admits one (its record is reused).
   */
  excluded?: string[];
  /** A cluster root only: the nodes (`server_name`) that must prove a removal before it commits. */
  members?: string[];
  /** A cluster root only: each node's latest proof, by node name (docs/cluster.md). */
  nodes?: Record<string, NodeProof>;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function isNameList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === "string" && isValidSpaceName(s)) && new Set(v).size === v.length;
}

/** Returns the reason a stored record is unusable, or the record. Never guesses a missing field. */
export function parseInventoryRecord(text: string): InventoryRecord | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  if (typeof raw !== "object" || raw === null) return "not an object";
  const r = raw as Record<string, unknown>;
  if (!Number.isInteger(r.generation) || (r.generation as number) < 1) return "generation is not a positive integer";
  if (!Number.isInteger(r.appliedGeneration) || (r.appliedGeneration as number) < 0) return "appliedGeneration is not an integer";
  if (!isNameList(r.spaces)) return "spaces is not a list of distinct valid space names";
  if (r.configDigest !== null && !(typeof r.configDigest === "string" && DIGEST.test(r.configDigest))) return "configDigest is not sha256:<hex> or null";
  if (r.serverConfigDigest !== undefined) {
    const d = r.serverConfigDigest as Record<string, unknown> | null;
    if (typeof d !== "object" || d === null || typeof d.digest !== "string" || !DIGEST.test(d.digest) || typeof d.forConfigDigest !== "string" || !DIGEST.test(d.forConfigDigest)) {
      return "serverConfigDigest is not {digest, forConfigDigest} of sha256:<hex>";
    }
  }
  if (r.excluded !== undefined && !isNameList(r.excluded)) return "excluded is not a list of distinct valid space names";
  const cluster = clusterFieldsProblem(r);
  if (cluster) return cluster;
  if (r.pending !== null) {
    const p = r.pending as Record<string, unknown> | undefined;
    if (typeof p !== "object" || p === null) return "pending is not an object or null";
    if (!Number.isInteger(p.generation)) return "pending.generation is not an integer";
    if (!["add", "remove", "reconcile", "batch", "limits", "revoke", "rotate-key"].includes(p.op as string)) return "pending.op is unknown";
    if (!isNameList(p.adds) || !isNameList(p.removes)) return "pending lists are malformed";
    const listed = new Set(r.spaces as string[]);
    if ((p.adds as string[]).some((a) => listed.has(a))) return "pending.adds names a space the committed list already holds";
    if (!(p.removes as string[]).every((x) => listed.has(x))) return "pending.removes names a space the committed list does not hold";
    if (typeof p.writer !== "string" || typeof p.leaseId !== "string" || typeof p.claimedAt !== "string") return "pending writer/leaseId/claimedAt missing";
    if (p.stagedDigest !== undefined && !(typeof p.stagedDigest === "string" && DIGEST.test(p.stagedDigest))) return "pending.stagedDigest is malformed";
    if (p.excluded !== undefined && !isNameList(p.excluded)) return "pending.excluded is malformed";
    if ((p.op === "limits" || p.op === "revoke" || p.op === "rotate-key") !== (p.limits !== undefined)) return "pending.limits belongs to, and only to, a limits, revoke or rotate-key op";
    if (p.limits !== undefined) {
      const l = p.limits as Record<string, unknown> | null;
      if (typeof l !== "object" || l === null || typeof l.space !== "string" || typeof l.from !== "string" || typeof l.to !== "string") return "pending.limits is malformed";
      if (!listed.has(l.space) || (p.adds as string[]).length > 0 || (p.removes as string[]).length > 0) return "pending.limits names a space outside an unchanged list";
    }
    if (p.proven !== undefined) {
      const bad = nodeProofsProblem(p.proven, "pending.proven");
      if (bad) return bad;
    }
    const adds = new Set(p.adds as string[]);
    if (p.mints !== undefined && (!isNameList(p.mints) || !(p.mints as string[]).every((m) => adds.has(m)))) return "pending.mints is not a subset of pending.adds";
  }
  return r as unknown as InventoryRecord;
}

/** Why `members`/`nodes` are malformed (a cluster root's fields), or undefined. */
function clusterFieldsProblem(r: Record<string, unknown>): string | undefined {
  if (r.members !== undefined && !(Array.isArray(r.members) && r.members.every((m) => typeof m === "string" && m !== "") && new Set(r.members).size === r.members.length)) return "members is not a list of distinct node names";
  if (r.nodes === undefined) return undefined;
  return nodeProofsProblem(r.nodes, "nodes");
}

/** Why a map of node proofs (`nodes`, `pending.proven`) is malformed, or undefined. */
function nodeProofsProblem(v: unknown, field: string): string | undefined {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return `${field} is not an object`;
  for (const [name, p] of Object.entries(v as Record<string, unknown>)) {
    const n = p as Record<string, unknown> | null;
    if (typeof n !== "object" || n === null || !Number.isInteger(n.appliedGeneration) || typeof n.configDigest !== "string" || !DIGEST.test(n.configDigest) || typeof n.provenAt !== "string") return `${field}.${name} is not {appliedGeneration, configDigest, provenAt}`;
    if (n.serverConfigDigest !== undefined && typeof n.serverConfigDigest !== "string") return `${field}.${name}.serverConfigDigest is not a string`;
  }
  return undefined;
}

/** The record's cluster fields, carried unchanged through a commit (absent on a single-broker root). */
export function clusterFields(r: InventoryRecord): Pick<InventoryRecord, "members" | "nodes"> {
  return { ...(r.members ? { members: r.members } : {}), ...(r.nodes ? { nodes: r.nodes } : {}) };
}

function isSorted(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if ((names[i - 1] as string) >= (names[i] as string)) return false;
  return true;
}

/**
 * The one rule for the list a claim commits (docs/saga.md, "The claim"): the committed list without
 * the claim's removes, with its adds, sorted. Every reader derives it here; the claim stores only the
 * delta, so a claim stays small at any tenant count. Linear in both lists when they are sorted (what
 * every writer stores); anything else is sorted first.
 */
export function claimedSpaces(spaces: readonly string[], claim: Pick<PendingMutation, "adds" | "removes">): string[] {
  const removes = new Set(claim.removes);
  const kept = removes.size === 0 ? spaces : spaces.filter((s) => !removes.has(s));
  const adds = isSorted(claim.adds) ? claim.adds : sortedNames(claim.adds);
  if (!isSorted(kept)) return sortedNames([...kept, ...adds]);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < kept.length || j < adds.length) {
    const a = kept[i];
    const b = adds[j];
    if (b === undefined || (a !== undefined && a < b)) out.push(kept[i++] as string);
    else if (a === undefined || b < a) out.push(adds[j++] as string);
    else {
      out.push(a); // listed and added: once (a parsed claim never holds both)
      i++;
      j++;
    }
  }
  return out;
}

/** The tenant list the record moves to: its claim's, or the committed one when nothing is pending. */
export function nextSpacesOf(record: Pick<InventoryRecord, "spaces" | "pending">): string[] {
  return record.pending ? claimedSpaces(record.spaces, record.pending) : [...record.spaces];
}

/** Whether the record lists `space` now or its claim is adding it: the names a verb must treat as trusted. */
export function listedOrClaimed(record: Pick<InventoryRecord, "spaces" | "pending">): Set<string> {
  return new Set([...record.spaces, ...(record.pending?.adds ?? [])]);
}

export function sortedNames(names: Iterable<string>): string[] {
  return [...new Set(names)].sort();
}

/** The record cold boot seeds from disk (create-only CAS at generation 1). */
export function seedRecord(spaces: string[], configDigest: string | null, proven: boolean): InventoryRecord {
  return { generation: 1, spaces: sortedNames(spaces), appliedGeneration: proven ? 1 : 0, configDigest, pending: null };
}

/** The server's digest of the config the record says runs, or undefined when none was read for it. */
export function runningServerDigest(record: InventoryRecord): string | undefined {
  const d = record.serverConfigDigest;
  return d && d.forConfigDigest === record.configDigest ? d.digest : undefined;
}

/** The names a disk-vs-KV comparison must account for: what the record lists plus what it excludes on purpose. */
export function accountedNames(record: InventoryRecord): Set<string> {
  return new Set([...record.spaces, ...(record.excluded ?? [])]);
}

/** Disk vs KV, where records the KV excludes on purpose (reconcile --adopt-kv) are not disk-only. */
export function diffLists(disk: readonly string[], record: InventoryRecord): { diskOnly: string[]; kvOnly: string[] } {
  const accounted = accountedNames(record);
  const onDisk = new Set(disk);
  return { diskOnly: disk.filter((s) => !accounted.has(s)), kvOnly: record.spaces.filter((s) => !onDisk.has(s)) };
}
