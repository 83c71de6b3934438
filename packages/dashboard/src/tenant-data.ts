import { showSpaceLimits, spaceListFrom, status, type JournalEntry, type PendingMutation, type SpaceListEntry, type StatusReport } from "@cotal/core";
import { GUARDS_ON, type Guards, type SpaceQuota } from "@cotal/core/light";
import { jobsStatus, redactRedisUrl, type BackupRun, type BackupScheduleEntry, type QueueStatus } from "@cotal/jobs";

export interface DashboardSpace extends SpaceListEntry {
  createdAt: string | null;
  /** The signed limits from the space's record on disk; null when no record is there (kv-only). */
  quota: SpaceQuota | null;
  quotaError?: string;
  /** The last successful scheduled backup of this space, from the worker's run records; null when none is recorded. */
  lastBackup: BackupRecord | null;
  /** The backup schedule of this space (`cotal space backup --every`); null when none. */
  backupSchedule: BackupSchedule | null;
}

export interface BackupSchedule {
  every: string;
  next: string | null;
  /** The schedule's last run, whatever its outcome (a failed one with its error): the page never says "none recorded" after a failure. */
  lastRun?: BackupRun | null;
}

export interface BackupRecord {
  artifact: string;
  bytes: number | null;
  finishedAt: string;
}

export interface LockHolder {
  pid: number;
  host: string;
  purpose: string;
  startedAt: string;
  status: "alive" | "dead" | "unknown";
}

function lockHolder(lock: StatusReport["lock"]): TenantPageData["lock"] {
  if (!lock || lock === "corrupt") return lock ?? null;
  return { pid: lock.pid, host: lock.host, purpose: lock.purpose, startedAt: lock.startedAt, status: lock.status };
}

export type QueuesSection =
  | { reachable: true; redis: string; queues: QueueStatus[] }
  | { reachable: false; redis: string; error: string };

/** Everything the tenant page shows, as the JSON endpoint serves it. */
export interface TenantPageData {
  readAt: string;
  root: string;
  state: StatusReport["state"];
  why: string;
  /** The core's way out of the headline state (status `next`, the root named); absent when nothing is owed. */
  next?: string;
  broker: StatusReport["broker"];
  generation: number | null;
  appliedGeneration: number | null;
  revision: number | null;
  inventoryError: string | null;
  pending: PendingMutation | null;
  /** The maintenance lock's holder, without its token (the page shows who, not what fences them). */
  lock: LockHolder | "corrupt" | null;
  journal: JournalEntry | null;
  journalError: string | null;
  provisioningOwed: string[];
  /** Tenants an online backup quiesced (the core's status: journal entry or JWT). */
  quiesced: StatusReport["quiesced"];
  corrupt: StatusReport["corrupt"];
  spaces: DashboardSpace[];
  queues: QueuesSection;
}

interface BackupView {
  last: Map<string, BackupRecord>;
  schedules: Map<string, BackupSchedule>;
}

/** Each schedule and its space's last success, as `cotal jobs schedules` lists them (one reader: @cotal/jobs schedules.ts). */
function backupView(schedules: readonly BackupScheduleEntry[]): BackupView {
  const last = new Map<string, BackupRecord>();
  const byspace = new Map<string, BackupSchedule>();
  for (const sc of schedules) {
    byspace.set(sc.space, { every: sc.cadence.replace(/^cron /, ""), next: sc.next, lastRun: sc.lastRun });
    if (sc.lastSuccess) last.set(sc.space, { artifact: sc.lastSuccess.artifact, bytes: sc.lastSuccess.bytes, finishedAt: sc.lastSuccess.at });
  }
  return { last, schedules: byspace };
}

async function queuesSection(root: string, redisUrl: string): Promise<{ section: QueuesSection; backups: BackupView }> {
  try {
    const js = await jobsStatus({ root, redisUrl, failedLimit: 20 });
    return { section: { reachable: true, redis: js.redis, queues: js.queues }, backups: backupView(js.schedules) };
  } catch (err) {
    return { section: { reachable: false, redis: redactRedisUrl(redisUrl), error: (err as Error).message }, backups: { last: new Map(), schedules: new Map() } };
  }
}

/**
 * One read of the root for the tenant page: the core's status and space list (never re-derived
 * here), each space's quota from its record, and the queues when Redis answers.
 */
export async function readTenantData(opts: { root: string; redisUrl: string; guards?: Guards }): Promise<TenantPageData> {
  const guards = opts.guards ?? GUARDS_ON;
  const [s, jobs] = await Promise.all([status({ root: opts.root, guards }), queuesSection(opts.root, opts.redisUrl)]);
  const list = spaceListFrom(s);
  const spaces = list.spaces.map((sp): DashboardSpace => {
    const disk = s.spaces.find((d) => d.name === sp.name);
    let quota: SpaceQuota | null = null;
    let quotaError: string | undefined;
    if (disk) {
      try {
        quota = showSpaceLimits(s.root, sp.name, guards).quota;
      } catch (err) {
        quotaError = (err as Error).message;
      }
    }
    return { ...sp, createdAt: disk?.createdAt ?? null, quota, ...(quotaError ? { quotaError } : {}), lastBackup: jobs.backups.last.get(sp.name) ?? null, backupSchedule: jobs.backups.schedules.get(sp.name) ?? null };
  });
  const inv = s.inventory;
  return {
    readAt: new Date().toISOString(),
    root: s.root,
    state: s.state,
    why: s.why,
    ...(s.next ? { next: s.next } : {}),
    broker: s.broker,
    generation: inv?.generation ?? null,
    appliedGeneration: inv?.appliedGeneration ?? null,
    revision: inv?.revision ?? null,
    inventoryError: s.inventoryError ?? null,
    pending: inv?.pending ?? null,
    lock: lockHolder(s.lock),
    journal: s.journal,
    journalError: s.journalError ?? null,
    provisioningOwed: s.provisioningOwed,
    quiesced: s.quiesced,
    corrupt: s.corrupt,
    spaces,
    queues: jobs.section,
  };
}
