/**
 * The broker's JetStream budget and the admission rule that keeps the authority account's reserve
 * (docs/quotas.md). Pure: callers pass the records; nothing here reads disk or the broker.
 */
import { SagaError } from "../errors.js";
import { formatBytes, parseBytes, type AccountLimits } from "../trust/limits.js";

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
    throw new SagaError("corrupt-record", `${source}: "jetstream" must be an object`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
  }
  const out = { ...DEFAULT_JETSTREAM_BUDGET };
  for (const [k, v] of Object.entries(raw)) {
    if (!(BUDGET_FIELDS as readonly string[]).includes(k)) {
      throw new SagaError("corrupt-record", `${source}: unknown jetstream field "${k}"; known: ${BUDGET_FIELDS.join(", ")}`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
    }
    let n: number;
    try {
      n = parseBytes(v, `jetstream.${k}`);
    } catch (err) {
      throw new SagaError("corrupt-record", `${source}: ${(err as Error).message}`, { next: `fix "jetstream" in ${source} (README "Quotas")` });
    }
    out[k as (typeof BUDGET_FIELDS)[number]] = n;
  }
  for (const [max, reserve] of [["maxFileStore", "reserveFile"], ["maxMemoryStore", "reserveMemory"]] as const) {
    if (out[max] <= 0 || out[reserve] < 0 || out[reserve] >= out[max]) {
      throw new SagaError("corrupt-record", `${source}: jetstream.${reserve} (${formatBytes(out[reserve])}) must be below a positive jetstream.${max} (${formatBytes(out[max])})`, {
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

/**
 * Refuses, before any write, limits that would let the tenants' caps together eat into the
 * authority reserve. `kept` are the spaces that stay as they are; `incoming` the new or changed ones.
 */
export function assertWithinBudget(budget: Readonly<JetStreamBudget>, kept: readonly QuotaHolder[], incoming: readonly QuotaHolder[], retry: string): Commitment {
  const after = commitment([...kept, ...incoming]);
  const before = commitment(kept);
  const rows = [
    ["disk", after.disk, before.disk, budget.maxFileStore, budget.reserveFile, "maxFileStore", "--max-disk"],
    ["memory", after.mem, before.mem, budget.maxMemoryStore, budget.reserveMemory, "maxMemoryStore", "--max-mem"],
  ] as const;
  for (const [what, total, committed, max, reserve, setting, flag] of rows) {
    const room = max - reserve;
    if (total <= room) continue;
    const free = Math.max(0, room - committed);
    const share = Math.floor(free / Math.max(1, incoming.length));
    throw new SagaError(
      "quota-overcommit",
      `${what} quotas would total ${formatBytes(total)} (${total} B), over the ${formatBytes(room)} tenants may claim: ` +
        `jetstream.${setting} ${formatBytes(max)} minus the authority reserve ${formatBytes(reserve)}; ` +
        `${kept.length} other space(s) already claim ${formatBytes(committed)}, leaving ${formatBytes(free)} (${free} B)`,
      {
        next: `${retry} ${flag} ${share}   # or raise jetstream.${setting} in settings.json (README "Quotas")`,
        details: { resource: what, requested: total - committed, committed, max, reserve, free, perSpace: share },
      },
    );
  }
  return after;
}
