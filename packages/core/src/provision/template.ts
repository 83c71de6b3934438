import { GUARDS_ON, type Guards } from "../guards.js";
import { rerunWith, CotalError } from "../errors.js";
import { spaceToken } from "../names.js";
import { DEFAULT_SPACE_QUOTA, MIN_SPACE_DISK, QUOTA_FIELDS, formatBytes, type SpaceQuota } from "../trust/limits.js";

/** How a resource is treated by backup: durable data is snapshotted, TTL/lease state is recreated empty. */
export type ResourceClass = "durable" | "ttl";

export interface TemplateStream {
  name: string;
  subjects: string[];
  class: ResourceClass;
  description: string;
  /** Copies JetStream keeps (R1, or R3 on a cluster root: docs/cluster.md "Tenant streams"). */
  replicas: number;
}

export interface TemplateBucket {
  bucket: string;
  history: number;
  /** Milliseconds; 0 keeps entries forever. */
  ttlMs: number;
  class: ResourceClass;
  description: string;
  replicas: number;
}

export interface SpaceTemplate {
  streams: TemplateStream[];
  buckets: TemplateBucket[];
}

/**
 * The default streams and buckets every space gets, named with the space token, each with the
 * root's `replicas` (checked by assertTemplateReplicas when the root is made).
 */
export function spaceTemplate(space: string, replicas = 1): SpaceTemplate {
  const t = spaceToken(space);
  return {
    streams: [
      { name: `cotal_events_${t}`, subjects: [`cotal.${t}.events.>`], class: "durable", description: `events of space ${space}`, replicas },
    ],
    buckets: [
      { bucket: `cotal_state_${t}`, history: 5, ttlMs: 0, class: "durable", description: `key/value state of space ${space}`, replicas },
      { bucket: `cotal_presence_${t}`, history: 1, ttlMs: 30_000, class: "ttl", description: `presence leases of space ${space}`, replicas },
    ],
  };
}

/** The replica counts a space's own streams may have: one copy, or JetStream's R3 on a cluster of three or more. */
export const TEMPLATE_REPLICAS: readonly number[] = [1, 3];

/**
 * Refuses a template replica count the broker cannot hold (`clusterSize` undefined: a single
 * broker, which keeps one copy of each stream). Pure; returns the count.
 */
export function assertTemplateReplicas(replicas: number, clusterSize: number | undefined, guards: Guards = GUARDS_ON): number {
  if (guards.TEMPLATE_REPLICAS_UNCHECKED) return replicas;
  const bad = (why: string, next: string): never => {
    throw new CotalError("invalid-argument", `--tenant-replicas ${replicas}: ${why}`, { next, details: { replicas, clusterSize: clusterSize ?? 1 } });
  };
  if (!TEMPLATE_REPLICAS.includes(replicas)) bad(`a space's streams are R${TEMPLATE_REPLICAS.join(" or R")}`, `cotal up --cluster 3 --tenant-replicas 3 --detach   # or --tenant-replicas 1`);
  if (clusterSize === undefined && replicas !== 1) bad("a single broker keeps one copy of each stream; R3 needs a cluster root", `cotal up --root <new dir> --cluster 3 --tenant-replicas ${replicas} --detach`);
  if (clusterSize !== undefined && replicas > clusterSize) bad(`more copies than the cluster's ${clusterSize} nodes`, `cotal up --cluster ${clusterSize} --tenant-replicas 1 --detach`);
  return replicas;
}

/** KV buckets are streams named KV_<bucket>; backup and rm need the stream names. */
export function templateStreamNames(space: string): string[] {
  const tpl = spaceTemplate(space);
  return [...tpl.streams.map((s) => s.name), ...tpl.buckets.map((b) => `KV_${b.bucket}`)];
}

/** nats-server's default max_payload: a tenant's explicit cap (the rendered max_payload, 8 MiB, is for the authority record). */
export const SERVER_MAX_PAYLOAD = 1024 ** 2;

/** `base` overlaid with the fields `overrides` names. */
export function resolveQuota(overrides: Partial<SpaceQuota>, base: Readonly<SpaceQuota> = DEFAULT_SPACE_QUOTA): SpaceQuota {
  const out = { ...base };
  for (const f of QUOTA_FIELDS) if (overrides[f] !== undefined) out[f] = overrides[f] as number;
  return out;
}

/**
 * Refuses a quota the space could not live with, or one that leaves a tenant unbounded on the
 * shared store: storage must be capped for the broker budget to mean anything (docs/quotas.md).
 */
export function assertQuotaUsable(space: string, q: Readonly<SpaceQuota>): void {
  const d = DEFAULT_SPACE_QUOTA;
  const needed = templateStreamNames(space).length;
  const bad: { field: keyof SpaceQuota; rule: string; fix: number }[] = [];
  if (q.disk < 0) bad.push({ field: "disk", rule: "must be bounded: an unlimited tenant can fill the shared store", fix: d.disk });
  else if (q.disk < MIN_SPACE_DISK) bad.push({ field: "disk", rule: `must be at least ${formatBytes(MIN_SPACE_DISK)} (the template's streams and buckets need room), not ${formatBytes(q.disk)}`, fix: MIN_SPACE_DISK });
  if (q.mem < 0) bad.push({ field: "mem", rule: "must be bounded: an unlimited tenant can fill the shared memory store", fix: d.mem });
  if (q.streams !== -1 && q.streams < needed) bad.push({ field: "streams", rule: `must be at least ${needed}, the template's stream and bucket count, not ${q.streams}`, fix: needed });
  for (const f of ["consumers", "conns", "subs"] as const) if (q[f] === 0) bad.push({ field: f, rule: "must be at least 1 (or -1 for unlimited)", fix: d[f] });
  if (q.payload === 0 || q.payload > SERVER_MAX_PAYLOAD) bad.push({ field: "payload", rule: `must be between 1 B and the server's max_payload ${formatBytes(SERVER_MAX_PAYLOAD)} (or -1 for the server's), not ${formatBytes(q.payload)}`, fix: SERVER_MAX_PAYLOAD });
  const first = bad[0];
  if (!first) return;
  // Every unusable field fixed at once, every other flag kept: the printed line is not refused again here.
  throw new CotalError("invalid-argument", `space ${space}: ${bad.map((b) => `limit ${b.field} ${b.rule}`).join("; ")}`, {
    next: `${rerunWith(Object.fromEntries(bad.map((b) => [`--max-${b.field}`, String(b.fix)])))}   # README "Quotas" lists each field and its default`,
    details: { space, field: first.field, value: q[first.field], fields: bad.map((b) => b.field) },
  });
}
