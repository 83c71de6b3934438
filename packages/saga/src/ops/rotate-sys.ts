import { rmSync } from "node:fs";
import { SagaError } from "../errors.js";
import { startMaintenanceBroker } from "../broker/maintenance-broker.js";
import { brokerState } from "../broker/runtime.js";
import { AuthorityStore } from "../inventory/authority-store.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { loadBrokerTrust, replaceBrokerTrust } from "../root/broker-store.js";
import { rotateSystemAccount } from "../trust/index.js";
import { withLease } from "../saga/lease-holder.js";
import { writeObserverCreds } from "../saga/materialise.js";
import { leaseKeyFor } from "./session.js";
import { withVerb } from "./verb.js";

export interface RotateSysResult {
  root: string;
  generation: number;
  systemAccount: string;
  retiredSystemAccount: string;
  reminted: string[];
  warning: string;
}

/**
 * Broker-wide system-account rotation (000 §5, P8), offline: a successor system account, its signing
 * seed retained from now on, and every tenant's $SYS observer re-minted under it. Fenced by the
 * writer lease (through a maintenance broker) and the broker-trust successor rule.
 */
export async function rotateSys(opts: { root: string }): Promise<RotateSysResult> {
  return withVerb({ root: opts.root, purpose: "cotal up --rotate-sys", journal: { verb: "up --rotate-sys" }, lockWaitMs: 30_000 }, async ({ layout, disk: spaces }) => {
    if (brokerState(layout).running) {
      throw new SagaError("broker-running", "rotating the system account needs the broker stopped: every tenant's $SYS creds change at once", {
        exit: "cotal down && cotal up --rotate-sys",
      });
    }
    const current = loadBrokerTrust(layout);
    const mb = await startMaintenanceBroker(layout);
    try {
      const store = await AuthorityStore.connect(mb.url, loadAuthorityAccount(layout), { name: "cotal rotate-sys" });
      try {
        return await withLease(store, leaseKeyFor(layout), "up --rotate-sys", async () => {
          const next = rotateSystemAccount(current);
          replaceBrokerTrust(layout, current, next);
          const rotated = loadBrokerTrust(layout);
          for (const s of spaces) {
            rmSync(layout.sysCredsFile(s.name, "observer"), { force: true });
            writeObserverCreds(layout, rotated, s.name);
          }
          return {
            root: layout.root,
            generation: next.generation,
            systemAccount: next.system.publicKey,
            retiredSystemAccount: current.system.publicKey,
            reminted: spaces.map((s) => s.name),
            warning: "full backups taken against the retired system-account chain no longer restore; retired $SYS creds stop connecting once the broker loads the new config",
          };
        });
      } finally {
        await store.close();
      }
    } finally {
      await mb.stop();
    }
  });
}
