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
  onBatch?: (info: { key: string; size: number; ms: number; ok: boolean }) => void;
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
    if (!(opts.maxBatch >= 1) || !(opts.maxWaitMs >= 0) || !((opts.maxInFlight ?? 1) >= 1)) throw new Error("group commit needs maxBatch >= 1, maxWaitMs >= 0 and maxInFlight >= 1");
  }

  submit(key: string, item: T): Promise<R> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [], committing: false, inFlight: 0, timer: undefined };
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
    const due = first.at + this.opts.maxWaitMs - Date.now();
    if (lane.waiting.length >= this.opts.maxBatch || due <= 0) {
      void this.flush(key, lane);
      return;
    }
    lane.timer ??= setTimeout(() => {
      lane.timer = undefined;
      this.schedule(key, lane);
    }, due);
  }

  private async flush(key: string, lane: Lane<T, R>): Promise<void> {
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = undefined;
    const batch = lane.waiting.splice(0, this.opts.maxBatch);
    lane.committing = true;
    lane.inFlight++;
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
      this.opts.onBatch?.({ key, size: batch.length, ms: performance.now() - t0, ok });
      this.schedule(key, lane);
      if (this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}
