/**
 * Monotonic milliseconds from the high-resolution clock. Every timestamp the harness records
 * (poller attempts, watcher events) uses this, so tests can take their own marks and compare.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
