import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { SagaError } from "../errors.js";
import { brokerState, type BrokerRuntime } from "../broker/runtime.js";
import { AuthorityStore } from "../inventory/authority-store.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { SagaEnv } from "../saga/mutation.js";
import type { SagaTiming } from "../saga/steps.js";

/** One lease key per root: the writer lease fences every cooperative writer of this root's config. */
export function leaseKeyFor(layout: RootLayout): string {
  let path = layout.root;
  try {
    path = realpathSync(layout.root);
  } catch {
    // a root that does not exist yet has no lease to share
  }
  return `root_${createHash("sha256").update(path).digest("hex").slice(0, 24)}`;
}

export interface LiveSession {
  runtime: BrokerRuntime;
  store: AuthorityStore;
  /** The saga environment, once the verb holds the maintenance lock. */
  envWith(lock: MaintenanceLock): SagaEnv;
  close(): Promise<void>;
}

export interface SessionHooks {
  onNotice?: (message: string) => void;
  onTiming?: (step: SagaTiming, ms: number) => void;
}

/** A saga environment on the running broker. A mutation that cannot reach the KV refuses; it never falls back to disk. */
export async function openLiveSession(layout: RootLayout, verb: string, hooks: SessionHooks = {}): Promise<LiveSession> {
  const st = brokerState(layout);
  if (!st.running) {
    throw new SagaError("broker-not-running", `the broker of ${layout.root} is not running; the inventory lives in its store`, {
      exit: `cotal up --detach${layout.root === undefined ? "" : ` --root ${layout.root}`}   # then re-run the command`,
    });
  }
  const store = await AuthorityStore.connect(st.runtime.url, loadAuthorityAccount(layout), { name: `cotal ${verb}` });
  const envWith = (lock: MaintenanceLock): SagaEnv => ({
    layout,
    store,
    runtime: st.runtime,
    lock,
    leaseKey: leaseKeyFor(layout),
    ...(hooks.onNotice ? { onNotice: hooks.onNotice } : {}),
    ...(hooks.onTiming ? { onTiming: hooks.onTiming } : {}),
  });
  return { runtime: st.runtime, store, envWith, close: () => store.close() };
}
