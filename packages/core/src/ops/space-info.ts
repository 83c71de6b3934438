/**
 * `cotal space info <name>`: one space's state, quota against usage, creds ledger, creds files and
 * account key. Read-only: no lock, no journal, no write; the state is space-list's, the quota the record's.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { brokerState } from "../broker/runtime.js";
import { connectAsAccount } from "../broker/connect.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { QUOTA_FIELDS, limitsQuota, type SpaceQuota } from "../trust/limits.js";
import { STREAM_ADMIN_SUBJECTS } from "../trust/permissions.js";
import type { LedgerEntry } from "../root/creds-ledger.js";
import { answeringUrls } from "../verb/session.js";
import { spaceListFrom, type SpaceListEntry, type SpaceState } from "./space-list.js";
import { spaceUsers, usersSummary, type SpaceUserRow } from "./space-users.js";
import { reachedFirst, status, type StatusReport } from "./status.js";

/** What the server counts against a space's quota now; `subs` is null when CONNZ did not answer. */
export interface SpaceUsage {
  disk: number;
  mem: number;
  streams: number;
  consumers: number;
  conns: number;
  subs: number | null;
}

/** One quota field beside its use: `limit` -1 is unlimited (no percent); `used` null when not read. */
export interface UsageRow {
  field: keyof SpaceQuota;
  limit: number | null;
  used: number | null;
  percent: number | null;
}

export interface SpaceCredsFile {
  user: string;
  path: string;
  kind: "user" | "sys-observer";
}

/** Within this long of its expiry a cred reads `soon` (docs/commands/space.md "space info"): time to mint its successor. */
export const EXPIRING_SOON_MS = 7 * 24 * 3600 * 1000;

/** A cred's expiry as an operator weighs it: `never` (revoking is the only way to take it back), `expired`, `soon`, `ok`. */
export type CredExpiry = "never" | "expired" | "soon" | "ok";

/** One row of the creds ledger as `space info` and the tenant page show it: `space users`' row, its expiry weighed and its permissions in a line. */
export interface SpaceInfoUser extends SpaceUserRow {
  expiry: CredExpiry;
  permissionsSummary: string;
  /** The public key's head and tail (`UDXU4RCS…M7NLCNF4`) for a table; `publicKey` is whole. */
  keyShort: string;
}

/** The creds ledger (`space users`), or why it was not read (no account record on disk). */
export type SpaceInfoUsers = { read: true; summary: string; rows: SpaceInfoUser[]; unreadable: number } | { read: false; reason: string };

export interface SpaceInfo {
  space: string;
  root: string;
  state: SpaceState;
  /** The root's derived state (status): a space reads "active" only on a clean enough root. */
  rootState: StatusReport["state"];
  publicKey: string | null;
  createdAt: string | null;
  broker: { running: boolean; url: string | null };
  /** Every quota field (null limits: no record on disk, kv-only). */
  limits: UsageRow[];
  /** `read` false: why usage is not shown (the broker is stopped, the tenant refused our user ...). */
  usage: { read: true; readAt: string } | { read: false; reason: string };
  creds: SpaceCredsFile[];
  /** Every cred minted for the space (the ledger's, then the unknown files'), never a seed. */
  users: SpaceInfoUsers;
}

/** The fields the server reports use of; payload and leafnodes are limits only. */
const USED_FIELDS: ReadonlySet<keyof SpaceQuota> = new Set(["disk", "mem", "streams", "consumers", "conns", "subs"]);

/** `used` of `limit` in percent, one decimal; null when unlimited (-1), zero or unknown. Pure. */
export function percentOf(used: number | null, limit: number | null): number | null {
  if (used === null || limit === null || limit <= 0) return null;
  return Math.round((used / limit) * 1000) / 10;
}

/** Every quota field beside what the server counts; pure (the CLI's table and --json both use it). */
export function usageRows(quota: SpaceQuota | null, usage: SpaceUsage | null): UsageRow[] {
  return QUOTA_FIELDS.map((field) => {
    const limit = quota ? quota[field] : null;
    const used = usage && USED_FIELDS.has(field) ? (usage[field as keyof SpaceUsage] ?? null) : null;
    return { field, limit, used, percent: percentOf(used, limit) };
  });
}

/** The creds files the root keeps for a space: `space creds` without --out, and its $SYS observer. */
export function spaceCredsFiles(layout: RootLayout, space: string): SpaceCredsFile[] {
  const dir = join(layout.spaceDir(space), "users");
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".creds")).sort();
  } catch {
    // no users directory: no creds minted into the root
  }
  const users = names.map((n): SpaceCredsFile => ({ user: n.slice(0, -".creds".length), path: join(dir, n), kind: "user" }));
  const observer = layout.sysCredsFile(space, "observer");
  return existsSync(observer) ? [...users, { user: "sys.observer", path: observer, kind: "sys-observer" }] : users;
}

/** Pure: how near a cred is to its expiry at `now`. */
export function credExpiry(expiresAt: string | undefined, now: number): CredExpiry {
  if (expiresAt === undefined) return "never";
  const left = Date.parse(expiresAt) - now;
  return left <= 0 ? "expired" : left <= EXPIRING_SOON_MS ? "soon" : "ok";
}

const listed = (subjects: readonly string[]): string => (subjects.length <= 3 ? subjects.join(", ") : `${subjects.slice(0, 3).join(", ")} and ${subjects.length - 3} more`);

/**
 * Pure: a cred's permissions in one line: admin or the default user's denied stream-admin API
 * (trust/permissions.ts), then any narrowing `space creds --allow-pub/--allow-sub` signed into it.
 */
export function permissionsSummary(e: Pick<LedgerEntry, "admin" | "permissions">): string {
  const { pub, sub } = e.permissions;
  const otherDenies = (pub?.deny ?? []).filter((d) => !STREAM_ADMIN_SUBJECTS.includes(d));
  const streamAdminDenied = (pub?.deny ?? []).some((d) => STREAM_ADMIN_SUBJECTS.includes(d));
  const parts = [e.admin ? "admin: full JetStream API" : streamAdminDenied ? "user: no stream admin" : "user"];
  parts.push(pub?.allow?.length ? `pub only ${listed(pub.allow)}` : "pub all subjects");
  parts.push(sub?.allow?.length ? `sub only ${listed(sub.allow)}` : "sub all subjects");
  if (otherDenies.length > 0) parts.push(`pub denied ${listed(otherDenies)}`);
  if (sub?.deny?.length) parts.push(`sub denied ${listed(sub.deny)}`);
  return parts.join("; ");
}

/** Pure: a public key cut to its first and last eight characters. */
export function shortKey(key: string): string {
  return key.length > 20 ? `${key.slice(0, 8)}…${key.slice(-8)}` : key;
}

/** Pure: `space users`' rows with their expiry weighed and permissions summed up. */
export function infoUsers(rows: readonly SpaceUserRow[], now: number): SpaceInfoUser[] {
  return rows.map((r) => ({ ...r, expiry: credExpiry(r.expiresAt, now), permissionsSummary: permissionsSummary(r), keyShort: shortKey(r.publicKey) }));
}

/** The ledger section of the document; a space without a record on disk (kv-only) has none, which is a line, not a failure. */
export function spaceInfoUsers(root: string, name: string, guards: Guards = GUARDS_ON, now = Date.now()): SpaceInfoUsers {
  try {
    const r = spaceUsers(root, name, guards, now);
    return { read: true, summary: usersSummary(r), rows: infoUsers(r.users, now), unreadable: r.unreadable };
  } catch (err) {
    return { read: false, reason: (err as { code?: string }).code === "space-not-found" ? "no account record on disk (kv-only)" : (err as Error).message };
  }
}

interface ConnzReply {
  data?: { total?: number; connections?: { name?: string; subscriptions?: number }[] };
  error?: { description?: string };
}

/** Connections and subscriptions of the account, every node's CONNZ summed, our own reader left out. */
async function accountConnz(nc: NatsConnection, self: string, nodes: number): Promise<{ conns: number; subs: number }> {
  // The server imports $SYS.REQ.ACCOUNT.PING.CONNZ into every account, scoped to that account.
  const replies = await nc.requestMany("$SYS.REQ.ACCOUNT.PING.CONNZ", JSON.stringify({ limit: 1024 }), { strategy: "count", maxMessages: nodes, maxWait: 2_000 });
  let conns = 0;
  let subs = 0;
  for await (const m of replies) {
    const r = m.json<ConnzReply>();
    if (r.error) throw new Error(`CONNZ refused: ${r.error.description ?? "no reason"}`);
    conns += r.data?.total ?? 0;
    for (const c of r.data?.connections ?? []) if (c.name !== self) subs += c.subscriptions ?? 0;
  }
  return { conns: Math.max(0, conns - 1), subs };
}

/**
 * What the account uses now, through a short-lived user of its own (as `space limits` reads
 * $JS.API.INFO): JetStream's account info and the account-scoped CONNZ.
 */
export async function readSpaceUsage(urls: readonly string[], rec: AccountRecord): Promise<SpaceUsage> {
  const self = `cotal-info-${rec.name}`;
  const nc = await connectAsAccount(urls, rec, { name: self, reconnect: false, timeoutMs: 3_000, ttlSeconds: 60, permissions: { allowPub: ["$JS.API.INFO", "$SYS.REQ.ACCOUNT.PING.CONNZ"], allowSub: ["_INBOX.>"] } });
  try {
    const info = await (await jetstreamManager(nc, { timeout: 3_000 })).getAccountInfo();
    const connz = await accountConnz(nc, self, urls.length);
    return { disk: info.storage, mem: info.memory, streams: info.streams, consumers: info.consumers, ...connz };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

export interface SpaceInfoOptions {
  root: string;
  name: string;
  guards?: Guards;
  /** The usage reader (tests hand in a fake; the default reads the running broker). */
  readUsage?: (urls: readonly string[], rec: AccountRecord) => Promise<SpaceUsage>;
}

/** The space's list entry from a status report; space-not-found (exit 5) when neither disk nor KV names it. Pure. */
export function spaceEntry(s: StatusReport, name: string): SpaceListEntry {
  const entry = spaceListFrom(s).spaces.find((x) => x.name === name);
  if (!entry) throw new CotalError("space-not-found", `space ${name} does not exist on ${s.root}`, { next: "cotal space list" });
  return entry;
}

/** The info document from what was read: `usage` is the counts, or why there are none. Pure. */
export function spaceInfoFrom(s: StatusReport, entry: SpaceListEntry, rec: AccountRecord | undefined, usage: SpaceUsage | string, creds: SpaceCredsFile[], readAt = new Date(), users: SpaceInfoUsers = { read: false, reason: "not read" }): SpaceInfo {
  const used = typeof usage === "string" ? null : usage;
  return {
    space: entry.name,
    root: s.root,
    state: entry.state,
    rootState: s.state,
    publicKey: rec?.publicKey ?? entry.publicKey,
    createdAt: rec?.createdAt ?? null,
    broker: { running: s.broker.running, url: s.broker.url ?? null },
    limits: usageRows(rec ? limitsQuota(rec.limits) : null, used),
    usage: typeof usage === "string" ? { read: false, reason: usage } : { read: true, readAt: readAt.toISOString() },
    creds,
    users,
  };
}

/** `cotal space info <name>`: read-only, lock-free; a stopped broker still shows the record's quota. */
export async function spaceInfo(opts: SpaceInfoOptions): Promise<SpaceInfo> {
  const guards = opts.guards ?? GUARDS_ON;
  const name = assertSpaceName(opts.name, guards);
  const s = await status({ root: opts.root, guards });
  const entry = spaceEntry(s, name);
  const layout = new RootLayout(s.root);
  const rec = loadSpaceAccount(layout, name);
  const runtime = brokerState(layout).runtime;
  let usage: SpaceUsage | string;
  if (!rec) usage = "no account record on disk (kv-only)";
  else if (!s.broker.running || !runtime) usage = "broker not running";
  else {
    try {
      usage = await (opts.readUsage ?? readSpaceUsage)(reachedFirst(s, answeringUrls(runtime)), rec);
    } catch (err) {
      usage = `not read: ${(err as Error).message}`;
    }
  }
  const readAt = new Date();
  return spaceInfoFrom(s, entry, rec, usage, spaceCredsFiles(layout, name), readAt, spaceInfoUsers(s.root, name, guards, readAt.getTime()));
}
