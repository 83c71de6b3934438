/** Runs `fn` over `items` with at most `limit` in flight; results keep the input order. */
export async function mapPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

/** What a paced pool tells its width function before starting more work. */
export interface PoolProgress {
  inFlight: number;
  /** Items not finished yet (in flight or not started). */
  unfinished: number;
}

/**
 * Like mapPool, but the width is asked again whenever a slot frees (e.g. it follows the broker's
 * free file descriptors); at least one item is always in flight, so the pool never stalls. On the
 * first failure nothing new starts, the items in flight settle, then that failure rejects.
 */
export function mapPaced<T, R>(items: readonly T[], width: (p: PoolProgress) => number, fn: (item: T) => Promise<R>): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const out: R[] = [];
    let next = 0;
    let inFlight = 0;
    let done = 0;
    let failure: { err: unknown } | undefined;
    const pump = (): void => {
      if (failure) {
        if (inFlight === 0) reject(failure.err);
        return;
      }
      if (done === items.length) {
        resolve(out);
        return;
      }
      const w = Math.max(1, Math.floor(width({ inFlight, unfinished: items.length - done })));
      while (next < items.length && inFlight < w) {
        const i = next++;
        inFlight++;
        Promise.resolve()
          .then(() => fn(items[i] as T))
          .then(
            (r) => {
              out[i] = r;
              done++;
            },
            (err: unknown) => {
              failure ??= { err };
            },
          )
          .finally(() => {
            inFlight--;
            pump();
          });
      }
    };
    pump();
  });
}
