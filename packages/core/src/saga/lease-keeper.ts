import type { InventoryStore } from "../inventory/inventory-store.js";
import type { Lease } from "../inventory/lease.js";
import { LEASE_TTL_MS } from "../inventory/lease.js";

/**
 * Renews the writer lease in the background while a saga runs (reloads and proofs can outlast one
 * TTL). The lease is liveness, not safety: `held()` re-reads it, and a failed renewal marks it lost.
 */
export class LeaseKeeper {
  #lease: Lease;
  #lost = false;
  #timer: NodeJS.Timeout | undefined;
  #renewing: Promise<void> | undefined;

  constructor(
    private readonly store: InventoryStore,
    lease: Lease,
    ttlMs = LEASE_TTL_MS,
  ) {
    this.#lease = lease;
    this.#timer = setInterval(() => {
      this.#renewing ??= this.#renew().finally(() => {
        this.#renewing = undefined;
      });
    }, Math.max(250, Math.floor(ttlMs / 3)));
    this.#timer.unref();
  }

  get lease(): Lease {
    return this.#lease;
  }

  async #renew(): Promise<void> {
    if (this.#lost) return;
    try {
      this.#lease = await this.store.renewLease(this.#lease);
    } catch {
      this.#lost = true;
    }
  }

  /** The fence: present, unexpired, and still carrying our leaseId. */
  async held(): Promise<boolean> {
    if (this.#renewing) await this.#renewing;
    if (this.#lost) return false;
    return this.store.checkLease(this.#lease);
  }

  async stop(release: boolean): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#renewing) await this.#renewing;
    if (release && !this.#lost) await this.store.releaseLease(this.#lease);
  }
}
