/**
 * `cotal space revoke <space> (--user NAME | --key U…) [--before TIME]` (docs/commands/space.md):
 * the space's account JWT re-signed with a revocation of those user keys, through the saga (op
 * "revoke": claimed, re-rendered, reloaded with proof, committed; resumed like a limits re-sign),
 * then the revoked users' live connections cut where the server can (KICK, 2.10+).
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import type { RootLayout } from "../root/layout.js";
import { CotalError } from "../errors.js";
import { assertSpaceName } from "../names.js";
import { certainInventory } from "../root/account-store.js";
import { resignSource, settledRecord } from "../saga/resign-base.js";
import { runMutation, type MutationResult } from "../saga/mutation.js";
import type { SessionHooks } from "../verb/session.js";
import { withLiveVerb } from "../verb/verb.js";
import { isPublicKey } from "../trust/nkeys.js";
import { resignUserRevocations, userRevocations } from "../trust/user-revocations.js";
import { evictUserConnections } from "../broker/evict-users.js";
import type { EvictionResult } from "../broker/evict-connections.js";
import { spaceUsers, type SpaceUserRow } from "./space-users.js";

export interface SpaceRevokeOptions extends SessionHooks {
  root: string;
  name: string;
  /** Every cred of this user name the root knows of (ledger and creds files). Exactly one of user/key. */
  user?: string;
  /** One user public key (U…). */
  key?: string;
  /** Unix seconds (default now): creds issued at or before it are refused; a later cred of the same name is kept. */
  before?: number;
  /** Revoke a key neither the ledger nor the root's creds files know (a cred minted before the ledger to --out). */
  force?: boolean;
  lockWaitMs?: number;
}

export interface RevokedCred {
  publicKey: string;
  user?: string;
  issuedAt?: string;
}

export interface SpaceRevokeResult {
  space: string;
  outcome: MutationResult["outcome"];
  generation: number;
  /** The creds the selection covers (already revoked ones included: a second revoke is a no-op). */
  revoked: RevokedCred[];
  /** The revocation time written (ISO). */
  before: string;
  /** Revocations dropped on the way: each covered only creds that have expired since. */
  pruned: string[];
  reloads: number;
  /** Rounds lost to another writer's commit (each re-decided on the new record; docs/saga.md). */
  conflicts: number;
  eviction?: EvictionResult;
  resumed?: MutationResult["resumed"];
}

/** What to write: the keys chosen, the entries that are new or later, the expired entries to drop. */
export interface RevocationPlan {
  creds: RevokedCred[];
  entries: Record<string, number>;
  prune: string[];
}

function selectionOf(space: string, rows: readonly SpaceUserRow[], opts: Pick<SpaceRevokeOptions, "user" | "key" | "force">): { publicKey: string; user?: string; iat?: number }[] {
  const chosen = rows.filter((r) => (opts.user !== undefined ? r.user === opts.user : r.publicKey === opts.key));
  if (chosen.length > 0) return chosen;
  if (opts.key !== undefined && opts.force) return [{ publicKey: opts.key }];
  const what = opts.user !== undefined ? `user ${opts.user}` : `key ${opts.key ?? ""}`;
  throw new CotalError("user-not-found", `space ${space} has no cred of ${what} in its ledger or its creds files; nothing was changed`, {
    next: `cotal space users ${space}${opts.key !== undefined ? "   # or add --force to revoke a key minted before the ledger" : ""}`,
  });
}

/**
 * The revocation to sign (pure): every chosen cred issued at or before `before` is covered; an entry
 * is written only where the account does not refuse that cred already; an entry whose creds have all
 * expired by `now` is pruned (the server refuses an expired JWT anyway), keeping the list bounded.
 */
export function planRevocation(space: string, rows: readonly SpaceUserRow[], current: Readonly<Record<string, number>>, opts: Pick<SpaceRevokeOptions, "user" | "key" | "force">, before: number, now: number): RevocationPlan {
  const covered = selectionOf(space, rows, opts).filter((c) => c.iat === undefined || c.iat <= before);
  if (covered.length === 0) {
    throw new CotalError("invalid-argument", `every cred of user ${opts.user ?? opts.key ?? ""} in space ${space} was issued after ${new Date(before * 1000).toISOString()}; nothing to revoke`, { next: `cotal space users ${space}` });
  }
  const entries: Record<string, number> = {};
  for (const c of covered) if ((current[c.publicKey] ?? 0) < (c.iat ?? before)) entries[c.publicKey] = Math.max(before, entries[c.publicKey] ?? 0);
  const prune = expiredRevocations(rows, current, now).filter((k) => !(k in entries));
  const creds = covered.map((c) => ({ publicKey: c.publicKey, ...(c.user !== undefined ? { user: c.user } : {}), ...(c.iat !== undefined ? { issuedAt: new Date(c.iat * 1000).toISOString() } : {}) }));
  return { creds, entries, prune };
}

/**
 * The revocations that refuse nothing any more (pure): every cred of the key the root knows has
 * expired by `now`, and the server refuses an expired JWT anyway. A key the root does not know, or
 * with a cred that never expires, is kept: the list stays bounded by the creds that could connect.
 */
export function expiredRevocations(rows: readonly SpaceUserRow[], current: Readonly<Record<string, number>>, now: number): string[] {
  return Object.keys(current).filter((k) => {
    const of = rows.filter((r) => r.publicKey === k);
    return of.length > 0 && of.every((r) => r.expiresAt !== undefined && Date.parse(r.expiresAt) <= now);
  });
}

/** `jwt` re-signed without its expired revocations (the next change of the account prunes them: `space limits`), or as it is. */
export function pruneExpiredRevocations(operator: { publicKey: string; seed: string }, layout: RootLayout, space: string, jwt: string, guards: Guards, now = Date.now()): string {
  const prune = expiredRevocations(spaceUsers(layout.root, space, guards, now).users, userRevocations(jwt), now);
  return prune.length === 0 ? jwt : resignUserRevocations(operator, jwt, {}, prune).jwt;
}

function assertSelector(space: string, opts: SpaceRevokeOptions): void {
  if ((opts.user === undefined) === (opts.key === undefined)) {
    throw new CotalError("invalid-argument", "name exactly one of --user and --key", { next: `cotal space users ${space}   # lists the users and keys to revoke` });
  }
  if (opts.key !== undefined && !isPublicKey(opts.key, "user")) {
    throw new CotalError("invalid-argument", `--key ${JSON.stringify(opts.key)} is not a user public key (U…)`, { next: `cotal space users ${space}` });
  }
  if (opts.before !== undefined && (!Number.isSafeInteger(opts.before) || opts.before <= 0)) {
    throw new CotalError("invalid-argument", `--before must be a time (ISO 8601 or unix seconds), got ${String(opts.before)}`, { next: `cotal space revoke --help   # the time forms --before takes` });
  }
}

export async function spaceRevoke(opts: SpaceRevokeOptions): Promise<SpaceRevokeResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const name = assertSpaceName(opts.name, guards);
  assertSelector(name, opts);
  const nowMs = Date.now();
  const before = opts.before ?? Math.floor(nowMs / 1000);
  return withLiveVerb({ ...opts, guards, purpose: `cotal space revoke ${name}`, journal: { verb: "space revoke" }, lockWaitMs: opts.lockWaitMs ?? 30_000 }, async ({ layout, lock, session, decided, view }) => {
    const env = session.envWith(lock);
    const settled = await settledRecord(env, "space revoke", decided);
    const base = settled.base ?? decided;
    // a resume may have rolled records back: decide on the disk as it left it
    const records = settled.resumed ? { revision: base.revision, records: certainInventory(layout, guards) } : view;
    const { broker, rec } = resignSource(layout, name, base);
    const plan = planRevocation(name, spaceUsers(layout.root, name, guards, nowMs).users, userRevocations(rec.jwt), opts, before, nowMs);
    const result = { space: name, revoked: plan.creds, before: new Date(before * 1000).toISOString(), pruned: plan.prune };
    if (Object.keys(plan.entries).length === 0) return { ...result, outcome: "noop" as const, generation: base.record.generation, pruned: [], reloads: 0, conflicts: 0 };
    // SKIP_REVOCATION: the revoke cell's positive control, the account is re-signed without the new entries.
    const to = resignUserRevocations(broker.operator, rec.jwt, guards.SKIP_REVOCATION ? {} : plan.entries, plan.prune).jwt;
    const r = await runMutation(env, { op: "revoke", verb: "space revoke", revokeChange: { space: name, from: rec.jwt, to } }, base, records);
    const eviction = r.outcome === "committed" && session.runtime ? await evictUserConnections(layout, session.runtime, rec.publicKey, plan.creds.map((c) => c.publicKey), guards) : undefined;
    return { ...result, outcome: r.outcome, generation: r.generation, reloads: r.reloads, conflicts: r.conflicts, ...(eviction ? { eviction } : {}), ...(r.resumed ? { resumed: r.resumed } : {}) };
  });
}
