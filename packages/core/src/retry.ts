/** How `retryWhile` repeats a step. */
export interface RetryOptions {
  /** The errors worth another attempt; any other is thrown at once. */
  transient: (err: unknown) => boolean;
  /** Attempts stop once this long has passed since the first (0: one attempt). */
  forMs: number;
  /** The pause between attempts. */
  pauseMs: number;
}

/**
 * `p`, or a rejection with `message` once `ms` passed, whichever comes first; the timer never outlives
 * the race. For a peer that accepts and never answers (a stopped server), which no client timeout covers.
 */
export async function within<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `step` until it returns, re-trying while it fails with a transient error and the window is
 * open; the last error is thrown. `step` must be safe to repeat (a read, a lease acquire, a connect).
 */
export async function retryWhile<T>(step: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const deadline = Date.now() + opts.forMs;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!opts.transient(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, opts.pauseMs));
    }
  }
}
