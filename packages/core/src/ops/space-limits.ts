/**
 * Space quotas at the verbs' edge: resolving a requested quota into signed limits and checking it
 * against the broker budget before any write (docs/quotas.md).
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError, rerunWith } from "../errors.js";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectAsAccount } from "../broker/connect.js";
import { assertSpaceName } from "../names.js";
import { certainInventory, loadSpaceAccount } from "../root/account-store.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import { resignSource, settledRecord } from "../saga/resign-base.js";
import { runMutation, type MutationResult } from "../saga/mutation.js";
import { resignAccountLimits } from "../trust/account.js";
import { pruneExpiredRevocations } from "./space-revoke.js";
import type { SessionHooks } from "../verb/session.js";
import { withLiveVerb } from "../verb/verb.js";
import { assertQuotaUsable, resolveQuota } from "../provision/template.js";
import { assertWithinBudget, type Commitment, type QuotaHolder } from "../broker/quota-budget.js";
import { effectiveBudget } from "../broker/jetstream-max.js";
import type { AccountRecord } from "../root/records.js";
import { QUOTA_FIELDS, UNLIMITED_JETSTREAM, formatBytes, limitsQuota, quotaLimits, type AccountLimits, type SpaceQuota } from "../trust/limits.js";

/** The limits to sign for `spaces` under `requested` (over `base`, default the template's); pure validation. */
export function limitsForQuota(spaces: readonly string[], requested: Partial<SpaceQuota>, guards: Guards, base?: Readonly<SpaceQuota>): AccountLimits {
  // UNLIMITED_TENANTS: the quota cell's positive control, new spaces are unbounded and no budget is kept.
  if (guards.UNLIMITED_TENANTS) return { ...UNLIMITED_JETSTREAM };
  const quota = resolveQuota(requested, base);
  for (const s of spaces) assertQuotaUsable(s, quota);
  return quotaLimits(quota);
}

/**
 * Refuses limits for `incoming` that would overcommit the root's budget, counting every other space
 * on disk (`onDisk`: the verb's certain inventory, read once under the lock) as it is. Run under the
 * maintenance lock so no other writer's add slips between check and claim.
 */
export function assertBudgetAllows(layout: RootLayout, onDisk: readonly AccountRecord[], incoming: readonly string[], limits: AccountLimits, guards: Guards, onNotice?: (m: string) => void): Commitment | undefined {
  if (guards.UNLIMITED_TENANTS) return undefined;
  const { budget, deferred } = effectiveBudget(layout, guards);
  if (deferred) {
    const running = deferred.running === "dynamic" ? "a dynamic max (set before quotas)" : `${formatBytes(deferred.running.file)} disk / ${formatBytes(deferred.running.memory)} memory`;
    onNotice?.(`settings.json asks for a JetStream max of ${formatBytes(deferred.settings.file)} disk / ${formatBytes(deferred.settings.memory)} memory; the running broker keeps ${running} until a cold start (next: cotal down && cotal up --detach)`);
  }
  const names = new Set(incoming);
  const kept: QuotaHolder[] = onDisk.filter((r) => !names.has(r.name));
  return assertWithinBudget(budget, kept, incoming.map((name) => ({ name, limits })), { root: layout.root });
}

export interface SpaceLimitsOptions extends SessionHooks {
  root: string;
  name: string;
  /** The fields to change; the others keep the space's current values. */
  quota: Partial<SpaceQuota>;
  lockWaitMs?: number;
  /** Accept a disk or stream quota below what the tenant already stores (its writes then fail until it deletes). */
  force?: boolean;
}

export interface SpaceLimitsResult {
  space: string;
  outcome: MutationResult["outcome"];
  generation: number;
  before: SpaceQuota;
  after: SpaceQuota;
  reloads: number;
  resumed?: MutationResult["resumed"];
}

/** A space's current quota from its record (read-only; no broker needed). */
export function showSpaceLimits(root: string, name: string, guards: Guards): { space: string; quota: SpaceQuota; limits: AccountLimits } {
  assertSpaceName(name, guards);
  const layout = new RootLayout(canonicalRoot(root));
  const rec = loadSpaceAccount(layout, name);
  if (!rec) throw new CotalError("space-not-found", `space ${name} does not exist on ${layout.root}`, { next: "cotal space list" });
  return { space: name, quota: limitsQuota(rec.limits), limits: rec.limits };
}

/**
 * `cotal space limits <name> …` through the saga: the account JWT re-signed with the new limits,
 * claimed (space + both JWTs), written, re-rendered, reloaded with proof, committed. A pending
 * claim found on the way is resumed first, so the change is decided on a settled record.
 */
/** What a space's account stores now, as the server counts it against its quota ($JS.API.INFO). */
async function storedNow(url: string, rec: AccountRecord): Promise<{ storage: number; streams: number }> {
  const nc = await connectAsAccount(url, rec, { name: `cotal-limits-${rec.name}`, reconnect: false, ttlSeconds: 60, permissions: { allowPub: ["$JS.API.INFO"], allowSub: ["_INBOX.>"] } });
  try {
    const info = await (await jetstreamManager(nc)).getAccountInfo();
    return { storage: info.storage, streams: info.streams };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * A lowered disk or stream quota must still hold what the tenant stores: below it, every write of
 * the tenant fails until it deletes data, which is `--force`'s to accept (docs/quotas.md).
 */
async function assertAboveUsage(url: string, rec: AccountRecord, before: SpaceQuota, after: SpaceQuota): Promise<void> {
  const lowered = (f: "disk" | "streams") => after[f] >= 0 && (before[f] < 0 || after[f] < before[f]);
  if (!lowered("disk") && !lowered("streams")) return;
  const now = await storedNow(url, rec);
  const under = [
    ...(lowered("disk") && after.disk < now.storage ? [{ flag: "--max-disk", what: `a disk quota of ${formatBytes(after.disk)} (${after.disk} bytes)`, stored: `${formatBytes(now.storage)} (${now.storage} bytes)`, value: now.storage }] : []),
    ...(lowered("streams") && after.streams < now.streams ? [{ flag: "--max-streams", what: `a quota of ${after.streams} stream(s)`, stored: `${now.streams} stream(s)`, value: now.streams }] : []),
  ];
  const first = under[0];
  if (!first) return;
  throw new CotalError("quota-overcommit", `space ${rec.name} already stores ${under.map((u) => `${u.stored}, more than ${u.what}`).join("; ")}: its writes would fail until it deletes data; nothing was changed`, {
    next: `${rerunWith(Object.fromEntries(under.map((u) => [u.flag, String(u.value)])))}   # or add --force to accept it`,
    details: { stored: now, requested: { disk: after.disk, streams: after.streams } },
  });
}

export async function spaceLimits(opts: SpaceLimitsOptions): Promise<SpaceLimitsResult> {
  const guards = opts.guards ?? GUARDS_ON;
  const name = assertSpaceName(opts.name, guards);
  if (Object.keys(opts.quota).length === 0) {
    throw new CotalError("invalid-argument", "no limit to change", { next: `cotal space limits ${name} --max-disk 256M   # or --limits FILE; without flags it prints the limits` });
  }
  limitsForQuota([name], opts.quota, guards); // each field's own rule, before the broker is asked anything
  return withLiveVerb({ ...opts, guards, purpose: `cotal space limits ${name}`, journal: { verb: "space limits" }, lockWaitMs: opts.lockWaitMs ?? 30_000 }, async ({ layout, lock, session, decided, disk, view }) => {
    const env = session.envWith(lock);
    const settled = await settledRecord(env, "space limits", decided);
    const base = settled.base ?? decided;
    const onDisk = settled.resumed ? certainInventory(layout, guards) : disk; // the resume may have rolled records back; `view` no longer matches `base`
    const { broker, rec } = resignSource(layout, name, base);
    const before = limitsQuota(rec.limits);
    const wanted = limitsForQuota([name], opts.quota, guards, before);
    const after = limitsQuota(wanted);
    if (QUOTA_FIELDS.every((f) => before[f] === after[f])) {
      return { space: name, outcome: "noop", generation: base.record.generation, before, after, reloads: 0 };
    }
    assertBudgetAllows(layout, onDisk, [name], wanted, guards, opts.onNotice);
    if (!opts.force && !guards.LIMITS_BELOW_USAGE) await assertAboveUsage(session.url, rec, before, after);
    const to = pruneExpiredRevocations(broker.operator, layout, name, resignAccountLimits(broker.operator, rec.jwt, wanted).jwt, guards);
    const r = await runMutation(env, { op: "limits", verb: "space limits", limitsChange: { space: name, from: rec.jwt, to } }, base, view);
    return { space: name, outcome: r.outcome, generation: r.generation, before, after, reloads: r.reloads, ...(r.resumed ? { resumed: r.resumed } : {}) };
  });
}
