/** Bounds of one group commit: at most `maxBatch` items, and no item waits more than `maxWaitMs` to join one. */
export interface GroupCommitOptions {
  maxBatch: number;
  maxWaitMs: number;
  /**
   * Batches of one key in flight at once (default 1). Past 1, the next batch starts once the one
   * before it calls `committed` (its saga committed and released the lock; its provisioning goes on),
   * so one batch's provisioning overlaps the next one's saga (docs/saga.md).
   */
  maxInFlight?: number;
  /** Called once per batch with its size and how long it ran (metrics). */
  onBatch?: (info: { key: string; size: number; ms: number; ok: boolean; heldMs?: number }) => void;
  /**
   * Whether more items of `key` are already on their way: claimed from the queue, or still in it,
   * but not yet submitted (`held` counts what this group commit has: waiting plus running). When
   * the window closes and this says yes, the batch waits for them, asking again every
   * `recheckMs`, until `maxHoldMs` after its first item. An idle BullMQ worker may hand a burst's
   * first job on, then claim the rest one round trip at a time before it hands any of them on, so
   * that first job would otherwise leave alone (docs/saga.md, "The queue"). A throw, a rejection,
   * or no answer before the hold runs out counts as no.
   */
  arriving?: (key: string, held: number) => Promise<boolean>;
  /** The longest a batch's first item waits while `arriving` says more are coming. Default `maxWaitMs`. */
  maxHoldMs?: number;
  /** How often `arriving` is asked again while it says yes. Default 20 ms. */
  recheckMs?: number;
}

export type ItemResult<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * Runs one batch; returns one result per item, in order. A throw fails every item with that error.
 * `committed` (idempotent) lets the key's next batch start before this one has returned.
 */
export type BatchRunner<T, R> = (key: string, items: readonly T[], committed: () => void) => Promise<ItemResult<R>[]>;

interface Entry<T, R> {
  item: T;
  at: number;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

interface Lane<T, R> {
  waiting: Entry<T, R>[];
  /** A batch that has not called `committed` yet: the next one waits for it. */
  committing: boolean;
  inFlight: number;
  /** Items in this key's running batches. */
  running: number;
  /** An `arriving` question is out; its answer schedules again. */
  asking: boolean;
  /** When the waiting batch's closed window was first held for items on their way (the batch's `heldMs`). */
  heldSince: number | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Coalesces concurrently submitted items into batches per key (a root), one batch committing per key
 * (and at most `maxInFlight` running): while one runs, the next fills up. Each submitter gets its own
 * item's result.
 */
export class GroupCommit<T, R> {
  private readonly lanes = new Map<string, Lane<T, R>>();
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly opts: GroupCommitOptions,
    private readonly run: BatchRunner<T, R>,
  ) {
    if (!(opts.maxBatch >= 1) || !(opts.maxWaitMs >= 0) || !((opts.maxInFlight ?? 1) >= 1) || !((opts.recheckMs ?? 20) > 0)) throw new Error("group commit needs maxBatch >= 1, maxWaitMs >= 0, maxInFlight >= 1 and recheckMs > 0");
  }

  submit(key: string, item: T): Promise<R> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [], committing: false, inFlight: 0, running: 0, asking: false, heldSince: undefined, timer: undefined };
      this.lanes.set(key, lane);
    }
    const l = lane;
    const p = new Promise<R>((resolve, reject) => l.waiting.push({ item, at: Date.now(), resolve, reject }));
    this.schedule(key, l);
    return p;
  }

  /** Items submitted but not yet handed to a batch. */
  get waiting(): number {
    let n = 0;
    for (const l of this.lanes.values()) n += l.waiting.length;
    return n;
  }

  /** Resolves once no batch runs and nothing waits. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private isIdle(): boolean {
    for (const l of this.lanes.values()) if (l.inFlight > 0 || l.waiting.length > 0) return false;
    return true;
  }

  private schedule(key: string, lane: Lane<T, R>): void {
    if (lane.committing || lane.inFlight >= (this.opts.maxInFlight ?? 1)) return; // re-scheduled when one commits or ends
    const first = lane.waiting[0];
    if (!first) return;
    const now = Date.now();
    const due = first.at + this.opts.maxWaitMs - now;
    if (lane.waiting.length >= this.opts.maxBatch) return void this.flush(key, lane);
    if (due > 0) return this.wake(key, lane, due);
    // The window has closed: go, unless more of this key's items are already on their way.
    const holdUntil = first.at + (this.opts.maxHoldMs ?? this.opts.maxWaitMs);
    const holdLeft = holdUntil - now;
    const arriving = this.opts.arriving;
    if (!arriving || holdLeft <= 0) return void this.flush(key, lane);
    if (lane.asking) return;
    lane.asking = true;
    void answerWithin(() => arriving(key, lane.waiting.length + lane.running), holdLeft).then((more) => {
      lane.asking = false;
      if (more && lane.waiting[0] === first) lane.heldSince ??= now;
      if (more) return this.wake(key, lane, Math.min(this.opts.recheckMs ?? 20, Math.max(holdUntil - Date.now(), 0)));
      // Flush only the batch this answer was about; a newer first item gets its own window.
      if (lane.waiting[0] === first && !lane.committing && lane.inFlight < (this.opts.maxInFlight ?? 1)) void this.flush(key, lane);
      else this.schedule(key, lane);
    });
  }

  /** Schedules the key again in `ms` (one timer per key). */
  private wake(key: string, lane: Lane<T, R>, ms: number): void {
    lane.timer ??= setTimeout(() => {
      lane.timer = undefined;
      this.schedule(key, lane);
    }, ms);
  }

  private async flush(key: string, lane: Lane<T, R>): Promise<void> {
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = undefined;
    const batch = lane.waiting.splice(0, this.opts.maxBatch);
    const heldMs = lane.heldSince === undefined ? undefined : Date.now() - lane.heldSince;
    lane.heldSince = undefined;
    lane.committing = true;
    lane.inFlight++;
    lane.running += batch.length;
    let freed = false;
    const committed = (): void => {
      if (freed) return;
      freed = true;
      lane.committing = false;
      this.schedule(key, lane);
    };
    const t0 = performance.now();
    let ok = true;
    try {
      const results = await this.run(key, batch.map((e) => e.item), committed);
      batch.forEach((e, i) => {
        const r = results[i];
        if (!r) e.reject(new Error(`batch runner returned no result for item ${i}`));
        else if (r.ok) e.resolve(r.value);
        else e.reject(r.error);
      });
      ok = results.every((r) => r.ok);
    } catch (err) {
      ok = false;
      for (const e of batch) e.reject(err);
    } finally {
      if (!freed) lane.committing = false; // only its own flag: a later batch may be committing now
      freed = true;
      lane.inFlight--;
      lane.running -= batch.length;
      this.opts.onBatch?.({ key, size: batch.length, ms: performance.now() - t0, ok, ...(heldMs === undefined ? {} : { heldMs }) });
      this.schedule(key, lane);
      if (this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}

/** `ask()`'s answer, or no when it throws, rejects, or has not answered within `ms` (a hung Redis never holds a batch past its hold). */
function answerWithin(ask: () => Promise<boolean>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    let answer: Promise<boolean>;
    try {
      answer = ask();
    } catch {
      answer = Promise.resolve(false);
    }
    answer.then(
      (more) => (clearTimeout(timer), resolve(more)),
      () => (clearTimeout(timer), resolve(false)),
    );
  });
}
