import { readLockOwner } from "@cotal/core/root";
import { RootLayout } from "@cotal/core";
import { describeError } from "@cotal/core/errors";
import { readJournal } from "@cotal/core/backup";
import { UnrecoverableError } from "bullmq";

/**
 * A busy root is not a broken one. `lock-held` (a live verb holds the root) and a `journal-blocked`
 * whose verb is still running are waited out by a queued job: BullMQ moves it to the delayed set
 * (`moveToDelayed` + `DelayedError`, no attempt spent) with capped exponential backoff and jitter,
 * for at most the worker's blocked-retry window; then, or at once for a journal a dead verb left,
 * the job fails for good with the refusal's own `next:`. The rule: docs/commands/jobs.md, "Busy and
 * blocked roots".
 */

/** The window's default (COTAL_JOBS_BLOCKED_RETRY_MS, `cotal worker --blocked-retry`), and the backoff's first step and cap. */
export const BLOCKED_RETRY_DEFAULTS = { windowMs: 10 * 60_000, baseMs: 1_000, capMs: 30_000 } as const;

export interface BlockedRetryOptions {
  /** How long a job keeps retrying from the first time it met the block; 0 fails it at once. */
  windowMs: number;
  /** The first retry's delay before jitter; each further one doubles, up to `capMs`. */
  baseMs: number;
  capMs: number;
}

/** What the root says now: the maintenance lock's holder, and the journal entry standing (undefined: none). */
export interface RootProbe {
  lockHeld(root: string): boolean;
  journal(root: string): JournalLike | undefined;
}

/** The fields of a journal entry this module compares (journal/journal.ts). */
export interface JournalLike {
  op?: unknown;
  space?: unknown;
  startedAt?: unknown;
  generation?: unknown;
}

/** The root on disk: a live (or another host's) lock holder counts as held; an unreadable journal stands. */
export const fsRootProbe: RootProbe = {
  lockHeld(root) {
    const o = readLockOwner(root);
    return o !== undefined && o !== "corrupt" && o.status !== "dead";
  },
  journal(root) {
    try {
      return readJournal(new RootLayout(root));
    } catch {
      return {}; // unreadable: it stands, and matches no entry
    }
  },
};

/** A busy or blocked root: the refusals this module waits out, or fails at once when an operator must act. */
export function isBlocked(err: unknown): boolean {
  const code = describeError(err).code;
  return code === "lock-held" || code === "journal-blocked";
}

/** Journal entries whose verb writes and clears them under one hold of the maintenance lock. */
const LOCK_BOUND_OPS: readonly unknown[] = ["space-rm", "rotate-sys"];

function sameEntry(a: JournalLike, b: JournalLike): boolean {
  return a.op === b.op && a.space === b.space && a.startedAt === b.startedAt && a.generation === b.generation;
}

/**
 * `transient`: wait it out; `final`: the operator must act (fail at once); `other`: not a block at all
 * (ERROR_TABLE's retriable flag and BullMQ's attempts decide, failures.ts).
 *
 * A removal or a rotation writes its journal entry and clears it under one hold of the maintenance
 * lock, so its entry standing while nobody live holds the lock was left by a dead verb. The lock is
 * read before the journal is read again: an entry that changed or went meanwhile was a running verb's.
 * Every other entry (a preserve-state cut, a stopped backup's quiesce, an unfinished restore) waits
 * for an operator's command; a running backup or restore already refuses with `lock-held`.
 */
export function classifyBlock(err: unknown, root: string, probe: RootProbe = fsRootProbe): "transient" | "final" | "other" {
  if (!isBlocked(err)) return "other";
  const e = describeError(err);
  if (e.code === "lock-held") return "transient";
  const entry = (e.details as { journal?: JournalLike } | undefined)?.journal;
  if (!entry || !LOCK_BOUND_OPS.includes(entry.op)) return "final";
  if (probe.lockHeld(root)) return "transient";
  const now = probe.journal(root);
  return now && sameEntry(now, entry) ? "final" : "transient";
}

/** Where a job keeps its blocked-retry state, beside its payload (stripped before the payload is validated). */
export const BLOCKED_KEY = "blocked";

export interface BlockedState {
  /** When the job first met the block (ms since the epoch): the window counts from here. */
  since: number;
  /** Retries scheduled so far: the backoff's exponent. */
  tries: number;
}

/** The job's payload without its retry state, and that state when well-formed. */
export function splitJobData(data: unknown): { payload: unknown; state: BlockedState | undefined } {
  if (!data || typeof data !== "object" || !(BLOCKED_KEY in data)) return { payload: data, state: undefined };
  const { [BLOCKED_KEY]: raw, ...payload } = data as Record<string, unknown>;
  const s = raw as Partial<BlockedState> | undefined;
  const state = s && Number.isFinite(s.since) && Number.isInteger(s.tries) && (s.tries as number) >= 0 ? { since: s.since as number, tries: s.tries as number } : undefined;
  return { payload, state };
}

/**
 * The next retry: the delay doubles from `baseMs` up to `capMs`, half of it jittered (`jitter` in
 * [0, 1)), and never past the window's end; undefined once the window is spent.
 */
export function nextBlockedRetry(state: BlockedState | undefined, now: number, opts: BlockedRetryOptions, jitter: number): { at: number; state: BlockedState } | undefined {
  const since = state?.since ?? now;
  const tries = state?.tries ?? 0;
  const end = since + opts.windowMs;
  if (now >= end) return undefined;
  const step = Math.min(opts.capMs, opts.baseMs * 2 ** Math.min(tries, 30));
  const delay = step / 2 + (step / 2) * Math.min(Math.max(jitter, 0), 1);
  return { at: Math.min(now + Math.round(delay), end), state: { since, tries: tries + 1 } };
}

const jitters = new WeakMap<object, number>();

/**
 * One jitter per thrown error: the jobs of one batch share the refusal, so they come back at the
 * same moment and batch together again (each job still keeps its own window).
 */
export function jitterFor(err: unknown, random: () => number = Math.random): number {
  if (!err || typeof err !== "object") return random();
  let j = jitters.get(err);
  if (j === undefined) {
    j = random();
    jitters.set(err, j);
  }
  return j;
}

/** The job's final failure: the refusal's own code, message and `next:`, and how long it waited when it did. */
export function blockedFailure(err: unknown, state: BlockedState | undefined, now: number): UnrecoverableError {
  const e = describeError(err, { rerun: "cotal jobs status" });
  const waited = state ? `; still blocked after ${Math.round((now - state.since) / 1000)} s of retries` : "";
  return new UnrecoverableError(`[${e.code}] ${e.message}${waited}${e.next ? ` (next: ${e.next})` : ""}`);
}

export type BlockedDecision = { kind: "other" } | { kind: "delay"; at: number; state: BlockedState } | { kind: "fail"; error: UnrecoverableError };

/** What a job does with a refusal: the whole rule in one place, pure but for the probe (tests pass their own). */
export function decideBlocked(err: unknown, ctx: { root: string; state: BlockedState | undefined; now: number; opts: BlockedRetryOptions; jitter: number; probe?: RootProbe }): BlockedDecision {
  const verdict = classifyBlock(err, ctx.root, ctx.probe);
  if (verdict === "other") return { kind: "other" };
  const next = verdict === "transient" ? nextBlockedRetry(ctx.state, ctx.now, ctx.opts, ctx.jitter) : undefined;
  return next ? { kind: "delay", ...next } : { kind: "fail", error: blockedFailure(err, ctx.state, ctx.now) };
}
