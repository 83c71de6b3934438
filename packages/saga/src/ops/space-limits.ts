/**
 * Space quotas at the verbs' edge: resolving a requested quota into signed limits and checking it
 * against the broker budget before any write (docs/quotas.md).
 */
import { certainInventory } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { loadSettings } from "../root/settings.js";
import { assertQuotaUsable, resolveQuota } from "../provision/template.js";
import { assertWithinBudget, resolveBudget, type Commitment, type QuotaHolder } from "../provision/quota-budget.js";
import { UNLIMITED_JETSTREAM, quotaLimits, type AccountLimits, type SpaceQuota } from "../trust/limits.js";

/** Test-only switch for the quota cell's positive control: new spaces are unbounded and no budget is kept. */
export function quotaGuardDisabled(): boolean {
  return process.env.COTAL_TEST_UNSAFE_UNLIMITED_TENANTS === "1";
}

/** The limits to sign for `spaces` under `requested` (over `base`, default the template's); pure validation. */
export function limitsForQuota(spaces: readonly string[], requested: Partial<SpaceQuota>, base?: Readonly<SpaceQuota>): AccountLimits {
  if (quotaGuardDisabled()) return { ...UNLIMITED_JETSTREAM };
  const quota = resolveQuota(requested, base);
  for (const s of spaces) assertQuotaUsable(s, quota);
  return quotaLimits(quota);
}

/**
 * Refuses limits for `incoming` that would overcommit the root's budget, counting every other space
 * on disk as it is. Run under the maintenance lock so no other writer's add slips between check and claim.
 */
export function assertBudgetAllows(layout: RootLayout, incoming: readonly string[], limits: AccountLimits, retry: string): Commitment | undefined {
  if (quotaGuardDisabled()) return undefined;
  const budget = resolveBudget(loadSettings(layout)?.jetstream, layout.settingsFile);
  const names = new Set(incoming);
  const kept: QuotaHolder[] = certainInventory(layout).filter((r) => !names.has(r.name));
  return assertWithinBudget(budget, kept, incoming.map((name) => ({ name, limits })), retry);
}
