import { RootLayout, spaceInfo, status, type SpaceInfo, type StatusReport } from "@cotal/core";
import { GUARDS_ON, type Guards } from "@cotal/core/light";
import { jobsStatus, redactRedisUrl, type BackupScheduleEntry, type QueueStatus } from "@cotal/jobs";
import { readCredsViews, type CredsView } from "./creds-view.js";
import { journalFact, lockFact, pendingFact, type Fact } from "./root-facts.js";
import { storedStreams, type StoredStream } from "./store-sizes.js";

/** A failed job of one of the root's queues that names this space. */
export type SpaceFailedJob = QueueStatus["failed"][number] & { type: QueueStatus["type"] };

export type SpaceJobsSection =
  | { reachable: true; redis: string; schedules: BackupScheduleEntry[]; failed: SpaceFailedJob[] }
  | { reachable: false; redis: string; error: string };

/** Everything a tenant's own page (/tenants/NAME) shows, as one read of the root. */
export interface TenantDetail {
  readAt: string;
  /** `cotal space info`'s document: state, root state, account, limits against usage, creds files. */
  info: SpaceInfo;
  rootWhy: string;
  /** The root's way out when its state is not clean (status `next`, the root named). */
  rootNext?: string;
  /** The creds files `info` lists that its ledger (`info.users`) does not name (the $SYS observer), decoded: minted and expiry (never a seed). */
  creds: CredsView[];
  /** Its streams and KV buckets with their size in the store. */
  streams: StoredStream[];
  /** What holds this tenant: the journal entry, a quiesce, a pending claim, the lock, owed provisioning. */
  touching: Fact[];
  jobs: SpaceJobsSection;
}

const mentions = (text: string, name: string): boolean => new RegExp(`(^|[\\s,\\[])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[\\s,\\]])`).test(text);

/** Pure: every standing record of the root that names this space, in the order a verb would meet them. */
export function touchesOf(s: StatusReport, name: string): Fact[] {
  const out: Fact[] = [];
  const j = s.journal;
  if (j && ((j.op === "space-rm" || j.op === "quiesce") ? j.space === name : j.op === "cut" && j.attempt?.space === name)) {
    const f = journalFact(j, s.quiesced.find((q) => q.space === name)?.owner?.status);
    out.push({ ...f, text: `journal: ${f.text}` });
  }
  if (s.journalError) out.push({ text: `journal unreadable: ${s.journalError}`, severity: "block" });
  for (const q of s.quiesced.filter((x) => x.space === name)) {
    const who = q.owner ? `, pid ${q.owner.pid} ${q.owner.status}` : "";
    out.push({ text: `quiesced (${q.source}${q.stage ? `, ${q.stage}` : ""}${who}): its clients are refused until the lift`, severity: q.owner?.status === "alive" ? "warn" : "block", next: q.next });
  }
  if (s.restoreUnfinished?.space === name) out.push({ text: `restore from ${s.restoreUnfinished.from} unfinished: its --replace deleted the old streams`, severity: "block", next: s.restoreUnfinished.next });
  const p = s.inventory?.pending;
  if (p && (p.adds.includes(name) || p.removes.includes(name))) out.push({ ...pendingFact(p), text: `pending claim: ${pendingFact(p).text}` });
  if (s.lock && (s.lock === "corrupt" || mentions(s.lock.purpose, name))) {
    const f = lockFact(s.lock === "corrupt" ? "corrupt" : { pid: s.lock.pid, host: s.lock.host, purpose: s.lock.purpose, startedAt: s.lock.startedAt, status: s.lock.status });
    out.push({ ...f, text: `lock: ${f.text}` });
  }
  if (s.provisioningOwed.includes(name)) out.push({ text: "provisioning owed: a verb stopped after trusting it; its streams may be missing", severity: "block" });
  return out;
}

/** Pure: the creds files the ledger's rows do not already show (the ledger lists every user file, known or not). */
export function filesOutsideLedger(info: Pick<SpaceInfo, "creds" | "users">): SpaceInfo["creds"] {
  const shown = new Set(info.users.read ? info.users.rows.map((u) => u.path) : []);
  return info.creds.filter((c) => !shown.has(c.path));
}

async function jobsOf(root: string, redisUrl: string, name: string): Promise<SpaceJobsSection> {
  try {
    const js = await jobsStatus({ root, redisUrl, failedLimit: 50 });
    return {
      reachable: true,
      redis: js.redis,
      schedules: js.schedules.filter((x) => x.space === name),
      failed: js.queues.flatMap((q) => q.failed.filter((f) => f.space === name).map((f) => ({ ...f, type: q.type }))),
    };
  } catch (err) {
    return { reachable: false, redis: redactRedisUrl(redisUrl), error: (err as Error).message };
  }
}

/**
 * One read for a tenant's page: `cotal space info`'s reader (its quota against the account's own
 * usage), the core's status for what holds it, the store for its streams, the creds files, and the
 * queues when Redis answers. Throws space-not-found (the page's 404) for a name neither disk nor KV knows.
 */
export async function readTenantDetail(opts: { root: string; redisUrl: string; name: string; guards?: Guards }): Promise<TenantDetail> {
  const guards = opts.guards ?? GUARDS_ON;
  const [info, s, jobs] = await Promise.all([spaceInfo({ root: opts.root, name: opts.name, guards }), status({ root: opts.root, guards }), jobsOf(opts.root, opts.redisUrl, opts.name)]);
  return {
    readAt: new Date().toISOString(),
    info,
    rootWhy: s.why,
    ...(s.next ? { rootNext: s.next } : {}),
    creds: readCredsViews(filesOutsideLedger(info)),
    streams: info.publicKey ? storedStreams(new RootLayout(info.root), info.publicKey) : [],
    touching: touchesOf(s, info.space),
    jobs,
  };
}
