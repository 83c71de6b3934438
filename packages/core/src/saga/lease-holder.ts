import { hostname } from "node:os";
import type { InventoryStore } from "../inventory/inventory-store.js";
import type { Lease, LeaseHolder } from "../inventory/lease.js";
import { isCotalError } from "../errors.js";
import { retryWhile } from "../retry.js";
import { pidAlive } from "../lock/process-identity.js";

/** This process, as a lease holder an operator can recognise. */
export function selfHolder(verb: string): LeaseHolder {
  return { pid: process.pid, host: hostname(), verb };
}

/**
 * A holder on this host whose pid is gone crashed: waiting out its TTL helps nobody. A live pid
 * (even a recycled one) is never judged dead, which errs toward waiting.
 */
export function holderIsDead(holder: LeaseHolder): boolean {
  return holder.host === hostname() && !pidAlive(holder.pid);
}

/** How long a writer waits out a live holder of the lease by default (SagaEnv.leaseWaitMs overrides it). */
export const LEASE_WAIT_MS = 30_000;

/** Acquires the writer lease, waiting out a live holder up to `waitMs` and taking over a dead one. */
export function acquireLeaseWaiting(store: InventoryStore, key: string, verb: string, waitMs = LEASE_WAIT_MS): Promise<Lease> {
  return retryWhile(() => store.acquireLease(key, selfHolder(verb), holderIsDead), { transient: (err) => isCotalError(err, "lease-held"), forMs: waitMs, pauseMs: 50 });
}

/** Runs `fn` holding the writer lease, and releases it however `fn` ends. */
export async function withLease<T>(store: InventoryStore, key: string, verb: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
  const lease = await acquireLeaseWaiting(store, key, verb);
  try {
    return await fn(lease);
  } finally {
    await store.releaseLease(lease);
  }
}
