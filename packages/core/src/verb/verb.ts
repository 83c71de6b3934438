import { type Guards } from "../guards.js";
import type { VersionedRecord } from "../inventory/authority-store.js";
import { reapLeakedPrivateBrokers } from "../broker/server-scan.js";
import { acquireMaintenanceLock, releaseMaintenanceLock, waitForMaintenanceLock, type MaintenanceLock } from "../lock/maintenance-lock.js";
import { certainInventory } from "../root/account-store.js";
import { reapStaleTemps } from "../root/secret-files.js";
import { pidAlive } from "../lock/process-identity.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { assertJournalAllows, journaledAttemptDir, journalVerbSays, type JournalEntry, type JournalPolicy } from "../journal/journal.js";
import { decisionRead, type DiskView } from "../saga/mutation.js";
import { openLiveSession, type LiveSession, type SessionHooks } from "./session.js";
import { inPhase, type PhaseListener } from "../saga/steps.js";

/** How a mutating verb enters the root; see docs/refusals.md for the order and why. */
export interface VerbOptions {
  root: string;
  /** The guards the entry handed in (docs/ablation.md); every step of the preamble and the verb's body takes them from the context. */
  guards: Guards;
  /** The lock owner's purpose, as `cotal status` prints it. */
  purpose: string;
  /** The verb's row of the journal's policy (journal/journal.ts JOURNAL_POLICY): what the journal may hold for it to proceed. */
  journal: JournalPolicy;
  /** Queue behind a live lock holder this long; undefined refuses at once, naming the holder. */
  lockWaitMs?: number;
  /** false: the verb may run on a root without records yet (`up` creating one). */
  certain?: boolean;
  /** Live verbs: make the decision read under the lock (the queued path: batches on one host never share a read). */
  decideUnderLock?: boolean;
  /** Each preamble step as it starts and ends (steps.ts VERB_STEPS), before the saga's own. */
  onPhase?: PhaseListener;
}

export interface VerbContext {
  layout: RootLayout;
  /** The verb's guards (VerbOptions.guards), for everything it calls. */
  guards: Guards;
  lock: MaintenanceLock;
  journal: JournalEntry | undefined;
  /** The certain tenant list on disk (empty when `certain: false`). */
  disk: AccountRecord[];
  /** Pids of leaked private brokers the preamble stopped (`down` reports them as strays). */
  reaped: number[];
  /** Releases the lock before `fn` returns (`space add` once its saga committed; docs/saga.md). Idempotent. */
  releaseLock: () => void;
}

/**
 * The one preamble of every mutating verb, in order: canonical root → maintenance lock → journal
 * → certain inventory. Every refusal here happens before the verb writes anything.
 */
export async function withVerb<T>(opts: VerbOptions, fn: (v: VerbContext) => Promise<T>): Promise<T> {
  const layout = new RootLayout(canonicalRoot(opts.root));
  // The one place a verb takes the maintenance lock; what runs under it (the boot step, the cut
  // resume) receives it in the context and never takes or releases its own.
  const { guards, onPhase } = opts;
  const lock = await inPhase(onPhase, "lock", () => (opts.lockWaitMs === undefined ? acquireMaintenanceLock(layout.root, opts.purpose, guards) : waitForMaintenanceLock(layout.root, opts.purpose, opts.lockWaitMs, guards)));
  let held = true;
  const releaseLock = (): void => {
    if (held) releaseMaintenanceLock(lock);
    held = false;
  };
  try {
    const { reaped, journal } = await inPhase(onPhase, "journal", async () => {
      const reaped = await reapLeakedPrivateBrokers(layout, journaledAttemptDir(layout), guards);
      for (const dir of [layout.authDir, layout.brokerSecretsDir]) reapStaleTemps(dir, pidAlive);
      return { reaped, journal: assertJournalAllows(layout, opts.journal, guards) };
    });
    const disk = opts.certain === false ? [] : await inPhase(onPhase, "inventory", () => certainInventory(layout, guards));
    return await fn({ layout, guards, lock, journal, disk, reaped, releaseLock });
  } finally {
    releaseLock();
  }
}

export interface LiveVerbContext extends VerbContext {
  session: LiveSession;
  /** The read this verb decides on, made before it queued for the lock (docs/resume.md, R1). */
  decided: VersionedRecord;
  /** `disk` tied to `decided`: read under the lock after it, so the saga may render from it (saga/mutation.ts). */
  view: DiskView;
}

/**
 * `withVerb` for a verb that needs the running broker: the journal is checked before anything is
 * opened too, so a blocked root names `cotal space rm` even while the broker is stopped.
 */
export async function withLiveVerb<T>(opts: VerbOptions & SessionHooks, fn: (v: LiveVerbContext) => Promise<T>): Promise<T> {
  const layout = new RootLayout(canonicalRoot(opts.root));
  assertJournalAllows(layout, opts.journal, opts.guards);
  const { onPhase } = opts;
  const session = await inPhase(onPhase, "connect", () => openLiveSession(layout, journalVerbSays(opts.journal), opts));
  try {
    const early = opts.decideUnderLock ? undefined : await inPhase(onPhase, "read", () => decisionRead(session.store));
    // The inventory is always read after the decision read (under the lock, then), so the pair is a
    // view the saga can trust while the revision stands; deciding under the lock reads it here too.
    const late = opts.decideUnderLock && opts.certain !== false;
    return await withVerb({ ...opts, root: layout.root, ...(late ? { certain: false } : {}) }, async (v) => {
      const decided = early ?? (await inPhase(onPhase, "read", () => decisionRead(session.store)));
      const disk = late ? await inPhase(onPhase, "inventory", () => certainInventory(layout, opts.guards)) : v.disk;
      return fn({ ...v, disk, session, decided, view: { revision: decided.revision, records: disk } });
    });
  } finally {
    await session.close();
  }
}
