import { within } from "@cotal/core/light";

/**
 * What a scrape reads from the root, the broker and Redis, bounded (docs/metrics.md, "Scrape cost"):
 * a snapshot younger than `maxAgeMs` is served as it is; otherwise one read starts (never two at
 * once) and a scrape waits for it at most `waitMs`, then serves the last snapshot it has. So a slow
 * broker or Redis makes the numbers older (cotal_exporter_snapshot_age_seconds says how old), never
 * piles up reads.
 */
export interface SnapshotCacheOptions<T> {
  read: () => Promise<T>;
  /** A snapshot this young is served without a read (default 10 s). */
  maxAgeMs?: number;
  /** How long a scrape waits for a read in flight before serving the last snapshot (default 5 s). */
  waitMs?: number;
  /** A read still running after this long is given up (counted as failed) so the next scrape may start another (default 60 s). */
  readTimeoutMs?: number;
  /** A read that failed, for the exporter's failure counter; the last snapshot stays. */
  onError?: (err: unknown) => void;
  now?: () => number;
}

export class SnapshotCache<T> {
  private last: { at: number; value: T } | undefined;
  private inFlight: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: SnapshotCacheOptions<T>) {
    this.now = opts.now ?? Date.now;
  }

  /** The freshest snapshot within the wait, with when it was read; undefined before the first read ends. */
  async get(): Promise<{ at: number; value: T } | undefined> {
    if (this.last && this.now() - this.last.at < (this.opts.maxAgeMs ?? 10_000)) return this.last;
    const read = (this.inFlight ??= this.refresh());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.opts.waitMs ?? 5_000)));
    await Promise.race([read, waited]);
    clearTimeout(timer);
    return this.last;
  }

  /** Whether a read is running now (tests; a scrape never starts a second one). */
  get reading(): boolean {
    return this.inFlight !== undefined;
  }

  private async refresh(): Promise<void> {
    const startedAt = this.now();
    const limitMs = this.opts.readTimeoutMs ?? 60_000;
    // A read that hangs (a broker or Redis that accepts and never answers) must not hold every later scrape.
    try {
      this.last = { at: startedAt, value: await within(this.opts.read(), limitMs, `snapshot read still running after ${limitMs} ms`) };
    } catch (err) {
      this.opts.onError?.(err);
    } finally {
      this.inFlight = undefined;
    }
  }
}
