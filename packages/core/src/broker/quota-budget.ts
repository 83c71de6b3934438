/**
 * The broker's JetStream budget and the admission rule that keeps the authority account's reserve
 * (docs/quotas.md). Pure: callers pass the records; nothing here reads disk or the broker.
 */
import { RERUN, rerunWith, CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { MIN_SPACE_DISK, formatBytes, parseBytes, type AccountLimits } from "../trust/limits.js";

export interface JetStreamBudget {
  /** Rendered as `max_file_store`: the server refuses every write past it, tenant or authority. */
  maxFileStore: number;
  /** Rendered as `max_memory_store`. */
  maxMemoryStore: number;
  /** Disk no tenant quota may claim: what the authority account (inventory, lease) always has. */
  reserveFile: number;
  reserveMemory: number;
}

/** Room for 10,000 spaces at the default quota; an operator sets the real disk in settings.json. */
export const DEFAULT_JETSTREAM_BUDGET: Readonly<JetStreamBudget> = Object.freeze({
  maxFileStore: 1024 ** 4,
  maxMemoryStore: 48 * 1024 ** 3,
  reserveFile: 256 * 1024 ** 2,
  reserveMemory: 64 * 1024 ** 2,
});

const BUDGET_FIELDS = ["maxFileStore", "maxMemoryStore", "reserveFile", "reserveMemory"] as const;

/** The budget a root's settings declare (absent fields take the defaults), checked. */
export function resolveBudget(raw: unknown, source: string): JetStreamBudget {
  if (raw === undefined) return { ...DEFAULT_JETSTREAM_BUDGET };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new CotalError("corrupt-record", `${source}: "jetstream" must be an object`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
  }
  const out = { ...DEFAULT_JETSTREAM_BUDGET };
  for (const [k, v] of Object.entries(raw)) {
    if (!(BUDGET_FIELDS as readonly string[]).includes(k)) {
      throw new CotalError("corrupt-record", `${source}: unknown jetstream field "${k}"; known: ${BUDGET_FIELDS.join(", ")}`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
    }
    let n: number;
    try {
      n = parseBytes(v, `jetstream.${k}`);
    } catch (err) {
      throw new CotalError("corrupt-record", `${source}: ${(err as Error).message}`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
    }
    out[k as (typeof BUDGET_FIELDS)[number]] = n;
  }
  for (const [max, reserve] of [["maxFileStore", "reserveFile"], ["maxMemoryStore", "reserveMemory"]] as const) {
    if (out[max] <= 0 || out[reserve] < 0 || out[reserve] >= out[max]) {
      throw new CotalError("corrupt-record", `${source}: jetstream.${reserve} (${formatBytes(out[reserve])}) must be below a positive jetstream.${max} (${formatBytes(out[max])})`, {
        next: `fix "jetstream" in ${source} (README "Quotas")`,
      });
    }
  }
  return out;
}

export interface QuotaHolder {
  name: string;
  limits: Pick<AccountLimits, "disk_storage" | "mem_storage">;
}

export interface Commitment {
  disk: number;
  mem: number;
  /** Spaces whose storage is unbounded (signed before quotas): outside any guarantee. */
  unbounded: string[];
}

/** What the tenants' caps add up to; unbounded ones are named, not summed. */
export function commitment(holders: readonly QuotaHolder[]): Commitment {
  let disk = 0;
  let mem = 0;
  const unbounded: string[] = [];
  for (const h of holders) {
    if (h.limits.disk_storage < 0 || h.limits.mem_storage < 0) unbounded.push(h.name);
    disk += Math.max(0, h.limits.disk_storage);
    mem += Math.max(0, h.limits.mem_storage);
  }
  return { disk, mem, unbounded: unbounded.sort() };
}

/** Where the printed way out of an overcommit points: the verb's root, so a line about another space runs from anywhere. */
export interface OvercommitContext {
  root?: string;
}

interface OverRow {
  what: "disk" | "memory";
  total: number;
  committed: number;
  max: number;
  reserve: number;
  setting: "maxFileStore" | "maxMemoryStore";
  flag: "--max-disk" | "--max-mem";
  /** The least quota a space may have (assertQuotaUsable): a lower value is refused again. */
  min: number;
  free: number;
  share: number;
}

/** The resources `incoming` would push past `max − reserve`, each with what is left per incoming space. */
function overRows(budget: Readonly<JetStreamBudget>, kept: readonly QuotaHolder[], incoming: readonly QuotaHolder[]): OverRow[] {
  const after = commitment([...kept, ...incoming]);
  const before = commitment(kept);
  const rows = [
    { what: "disk", total: after.disk, committed: before.disk, max: budget.maxFileStore, reserve: budget.reserveFile, setting: "maxFileStore", flag: "--max-disk", min: MIN_SPACE_DISK },
    { what: "memory", total: after.mem, committed: before.mem, max: budget.maxMemoryStore, reserve: budget.reserveMemory, setting: "maxMemoryStore", flag: "--max-mem", min: 0 },
  ] as const;
  return rows
    .filter((r) => r.total > r.max - r.reserve)
    .map((r) => {
      const free = Math.max(0, r.max - r.reserve - r.committed);
      return { ...r, free, share: Math.floor(free / Math.max(1, incoming.length)) };
    });
}

/** A size flag's value that parses back to at most `n` bytes: whole GiB when exact, else MiB, KiB or bytes rounded down. */
export function sizeFlagValue(n: number): string {
  if (n >= 1024 ** 3 && n % 1024 ** 3 === 0) return `${n / 1024 ** 3}G`;
  if (n >= 1024 ** 2) return `${Math.floor(n / 1024 ** 2)}M`;
  if (n >= 1024) return `${Math.floor(n / 1024)}K`;
  return String(n);
}

/**
 * The way out when even the least quota does not fit (less than the minimum left per space): lower
 * the kept space with the most quota above the minimum by what is missing, then the command again
 * (as asked, else at the least quota); if no single space can give that, the figures. Never a value
 * the same check refuses again. `others` lowers the other over-committed resources in the rerun.
 */
function freeBudgetNext(row: OverRow, kept: readonly QuotaHolder[], incoming: readonly QuotaHolder[], others: Record<string, string>, ctx: OvercommitContext): string {
  const field = row.what === "disk" ? "disk_storage" : "mem_storage";
  const room = row.max - row.reserve;
  const root = ctx.root === undefined ? "" : ` --root ${shellWord(ctx.root)}`;
  const raise = `raise jetstream.${row.setting} in settings.json (README "Quotas")`;
  const ranked = kept.filter((h) => h.limits[field] > row.min).sort((a, b) => b.limits[field] - a.limits[field] || a.name.localeCompare(b.name));
  const top = ranked[0];
  const atLeast = row.committed + incoming.length * row.min - room;
  const options = [
    { need: row.total - room, rerun: Object.keys(others).length > 0 ? rerunWith(others) : RERUN },
    { need: atLeast, rerun: rerunWith({ ...others, [row.flag]: sizeFlagValue(row.min) }) },
  ];
  for (const { need, rerun } of top ? options : []) {
    const have = (top as QuotaHolder).limits[field];
    if (have - need < row.min) continue;
    const value = sizeFlagValue(have - need); // rounded down: frees at least `need`
    return `cotal${root} space limits ${(top as QuotaHolder).name} ${row.flag} ${value} && ${rerun}   # lowers ${(top as QuotaHolder).name}'s ${row.what} quota from ${formatBytes(have)} to ${formatBytes(parseBytes(value, row.flag))}; or ${raise}`;
  }
  const figures = ranked.slice(0, 3).map((h) => `${h.name} ${formatBytes(h.limits[field])}`).join(", ");
  return `cotal${root} space list   # no one space can give the ${formatBytes(atLeast)} missing${figures ? ` (largest ${row.what} quotas: ${figures})` : ""}: lower several with cotal space limits <name> ${row.flag} <size>, or ${raise}`;
}

/**
 * Refuses, before any write, limits that would let the tenants' caps together eat into the
 * authority reserve. `kept` are the spaces that stay as they are; `incoming` the new or changed ones.
 * The printed `next` is the refused command with only the over-committed flags lowered to what fits
 * (every other flag kept), or, when not even the least quota fits, a line that frees budget first.
 */
export function assertWithinBudget(budget: Readonly<JetStreamBudget>, kept: readonly QuotaHolder[], incoming: readonly QuotaHolder[], ctx: OvercommitContext = {}): Commitment {
  const after = commitment([...kept, ...incoming]);
  const over = overRows(budget, kept, incoming);
  const first = over[0];
  if (!first) return after;
  const room = first.max - first.reserve;
  const starved = over.find((r) => r.share < r.min);
  const lowered = Object.fromEntries(over.filter((r) => r !== starved).map((r) => [r.flag, sizeFlagValue(r.share)]));
  const next = starved
    ? freeBudgetNext(starved, kept, incoming, lowered, ctx)
    : `${rerunWith(lowered)}   # or raise jetstream.${first.setting} in settings.json (README "Quotas")`;
  throw new CotalError(
    "quota-overcommit",
    `${first.what} quotas would total ${formatBytes(first.total)} (${first.total} B), over the ${formatBytes(room)} tenants may claim: ` +
      `jetstream.${first.setting} ${formatBytes(first.max)} minus the authority reserve ${formatBytes(first.reserve)}; ` +
      `${kept.length} other space(s) already claim ${formatBytes(first.committed)}, leaving ${formatBytes(first.free)} (${first.free} B)` +
      (starved ? `, less than the ${formatBytes(starved.min)} a space needs at least` : ""),
    {
      next,
      details: { resource: first.what, requested: first.total - first.committed, committed: first.committed, max: first.max, reserve: first.reserve, free: first.free, perSpace: first.share, over: over.map((r) => ({ resource: r.what, free: r.free, perSpace: r.share })) },
    },
  );
}
