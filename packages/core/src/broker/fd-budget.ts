import { GUARDS_ON, type Guards } from "../guards.js";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { CotalError } from "../errors.js";
import { versionAtLeast, type ServerVersion } from "./server-features.js";

/**
 * Open files nats-server keeps per provisioned tenant (the default template: one stream, two KV
 * buckets), measured with packages/bench/src/fd-budget.ts on /proc/<pid>/fd (BENCHMARKS.md "File
 * descriptors"): 2.9.10 keeps two per stream (block + index), 2.10+ one. Unknown versions take the larger.
 */
export function fdsPerTenant(version: ServerVersion | undefined): number {
  return version && versionAtLeast(version, "2.10.0") ? 3 : 6;
}

/** Clients, the reload, provisioner connections and the server's own files need this much on top. */
export function fdHeadroom(limit: number): number {
  return Math.max(256, Math.ceil(limit * 0.05));
}

export interface FdBudgetInput {
  /** The broker's soft RLIMIT_NOFILE (what it can open). */
  limit: number;
  /** Descriptors it holds now. */
  open: number;
  /** Tenants the change adds. */
  adds: number;
  perTenant: number;
}

export interface FdBudget extends FdBudgetInput {
  headroom: number;
  /** open + adds × perTenant + headroom. */
  needed: number;
  fits: boolean;
  /** The most tenants this broker can still take (0 when already over). */
  room: number;
}

/** Pure: whether `adds` more tenants fit under the broker's open-file limit, with headroom. */
export function fdBudget(input: FdBudgetInput): FdBudget {
  const headroom = fdHeadroom(input.limit);
  const needed = input.open + Math.ceil(input.adds * input.perTenant) + headroom;
  const room = Math.max(0, Math.floor((input.limit - headroom - input.open) / input.perTenant));
  return { ...input, headroom, needed, fits: needed <= input.limit, room };
}

/** The soft and hard "Max open files" of a /proc/<pid>/limits text; "unlimited" is Infinity. */
export function parseFdLimits(text: string): { soft: number; hard: number } | undefined {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (!m) return undefined;
  const n = (s: string | undefined): number => (s === "unlimited" ? Number.POSITIVE_INFINITY : Number(s));
  const soft = n(m[1]);
  const hard = n(m[2]);
  return Number.isNaN(soft) || Number.isNaN(hard) ? undefined : { soft, hard };
}

/** The broker's limits and open count, or undefined when /proc does not show them (another host, no procfs). */
export function readBrokerFds(pid: number): { soft: number; hard: number; open: number } | undefined {
  try {
    const limits = parseFdLimits(readFileSync(`/proc/${pid}/limits`, "utf8"));
    if (!limits) return undefined;
    return { ...limits, open: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return undefined;
  }
}

/** `msgs/<n>.blk` (every version) and 2.9's `msgs/<n>.idx`. */
const BLOCK_FILE = /\/msgs\/\d+\.(blk|idx)$/;

/** The broker's open descriptors that are JetStream message-block files: what it closes once they idle. */
export function countBlockFds(pid: number): number | undefined {
  try {
    let n = 0;
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (BLOCK_FILE.test(readlinkSync(`/proc/${pid}/fd/${fd}`))) n++;
      } catch {
        // closed between the listing and the readlink
      }
    }
    return n;
  } catch {
    return undefined;
  }
}

/**
 * Pure: whether the batch could fit once every open block file closed. nats-server closes a
 * block's files 30 s after its last write, at its store's next sync pass; what is not a block file
 * (connections, the server's own files) stays, so past this no wait helps.
 */
export function idleCloseCouldFit(b: FdBudget, blockFds: number): boolean {
  return b.needed - blockFds <= b.limit;
}

/**
 * How long a batch waits for room (docs/lifecycle.md, "Open files"): the 30 s idle timer plus the
 * longest default sync pass that applies it (2 minutes on 2.14.10, 1 on 2.9.10), so files a batch just opened close.
 */
export const FD_IDLE_WAIT_MS = 150_000;

function fdBudgetRefusal(b: FdBudget, hard: number, pid: number, command: string, waitedMs: number): CotalError {
  const want = Math.max(65_536, 2 ** Math.ceil(Math.log2(b.needed)));
  const waited = waitedMs > 0 ? ` (after waiting ${Math.round(waitedMs / 1000)} s for it to close idle block files)` : "";
  return new CotalError(
    "fd-budget",
    `${b.adds} new space(s) need about ${b.needed} open files on the broker (${b.open} open now + ${b.adds} × ${b.perTenant} per tenant + ${b.headroom} headroom), but nats-server pid ${pid} may open ${b.limit}; it has room for ${b.room} more${waited}. Nothing was written.`,
    {
      next: `raise the broker's open-file limit, then restart it: LimitNOFILE=${want} in the systemd unit (infra/systemd/cotal-broker.service) or \`ulimit -n ${want}\` in the shell, then \`cotal down && cotal up --detach\`, then re-run ${command}; or add at most ${b.room} space(s) now`,
      details: { limit: b.limit, hardLimit: hard, open: b.open, adds: b.adds, perTenant: b.perTenant, headroom: b.headroom, needed: b.needed, room: b.room, pid, waitedMs: Math.round(waitedMs) },
    },
  );
}

/**
 * Refuses, before any write, a change whose tenants would not fit in the broker's file descriptors:
 * past the limit nats-server fails stream creation mid-provisioning, after the saga trusted them.
 */
export function assertFdBudget(pid: number, version: ServerVersion | undefined, adds: number, command: string, guards: Guards): FdBudget | undefined {
  if (adds <= 0 || guards.IGNORE_FD_BUDGET) return undefined;
  const fds = readBrokerFds(pid);
  if (!fds) return undefined;
  const b = fdBudget({ limit: fds.soft, open: fds.open, adds, perTenant: fdsPerTenant(version) });
  if (b.fits) return b;
  throw fdBudgetRefusal(b, fds.hard, pid, command, 0);
}

export interface FdWaitOptions {
  /** The longest wait for room (default FD_IDLE_WAIT_MS); 0 refuses at once, as assertFdBudget does. */
  waitMs?: number;
  pollMs?: number;
  /** Told once, when the wait begins. */
  onNotice?: (message: string) => void;
  /** Seams for the unit tests: the broker's fds and its block files, the clock, the sleep. */
  read?: (pid: number) => { soft: number; hard: number; open: number } | undefined;
  blocks?: (pid: number) => number | undefined;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** The verb's guards (IGNORE_FD_BUDGET; docs/ablation.md). */
  guards?: Guards;
}

/**
 * assertFdBudget that waits, bounded, while the batch would fit once the broker closes its idle
 * block files (the files of tenants provisioned in the last half minute are still open: a fill in
 * batches outruns the server's idle close). A batch no idle close could fit is refused at once.
 */
export async function awaitFdBudget(pid: number, version: ServerVersion | undefined, adds: number, command: string, opts: FdWaitOptions = {}): Promise<FdBudget | undefined> {
  if (adds <= 0 || (opts.guards ?? GUARDS_ON).IGNORE_FD_BUDGET) return undefined;
  const { waitMs = FD_IDLE_WAIT_MS, pollMs = 1000, read = readBrokerFds, blocks = countBlockFds, now = Date.now, sleep = (ms) => new Promise((r) => setTimeout(r, ms)) } = opts;
  const start = now();
  let told = false;
  for (;;) {
    const fds = read(pid);
    if (!fds) return undefined;
    const b = fdBudget({ limit: fds.soft, open: fds.open, adds, perTenant: fdsPerTenant(version) });
    if (b.fits) return b; // the common case reads no fd's target
    const waited = now() - start;
    const closable = blocks(pid) ?? 0;
    if (waited >= waitMs || !idleCloseCouldFit(b, closable)) throw fdBudgetRefusal(b, fds.hard, pid, command, waited);
    if (!told) {
      told = true;
      opts.onNotice?.(`the broker holds ${b.open} open files (${closable} of them message blocks it closes once idle) and ${adds} new space(s) need ${b.needed - b.limit} more than its limit of ${b.limit} allows: waiting up to ${Math.round(waitMs / 1000)} s for it to close idle files`);
    }
    await sleep(Math.min(pollMs, Math.max(0, waitMs - waited)));
  }
}

/**
 * Descriptors one provisioner may hold on the broker while it works beyond the tenant's steady
 * files: its connection plus, at worst, its streams' files opened twice while they are created.
 */
export function fdsPerProvisioner(perTenant: number): number {
  return 1 + perTenant;
}

export interface ProvisionWidthInput {
  limit: number;
  /** Descriptors the broker holds now (in-flight provisioners included). */
  open: number;
  /** Tenants not provisioned yet: their steady files are still to come. */
  unfinished: number;
  perTenant: number;
  /** The pool's own bound (PROVISION_CONCURRENCY). */
  max: number;
}

/**
 * Pure: how many provisioners may be in flight now so that the broker stays under its limit with
 * half the headroom left to clients and the reload: the tenants still owed are charged their steady
 * files first, and what is left is shared out per provisioner. 0 means "one at a time, no more"
 * (the caller keeps one in flight); a batch assertFdBudget let through always gets at least
 * headroom / 2 / fdsPerProvisioner.
 */
export function provisionWidth(input: ProvisionWidthInput): number {
  const reserve = Math.ceil(fdHeadroom(input.limit) / 2);
  const spare = input.limit - reserve - input.open - Math.ceil(input.unfinished * input.perTenant);
  if (!Number.isFinite(spare)) return input.max;
  return Math.max(0, Math.min(input.max, Math.floor(spare / fdsPerProvisioner(input.perTenant))));
}
