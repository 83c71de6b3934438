import { existsSync } from "node:fs";
import { brokerState } from "../broker/runtime.js";
import { readLockOwner } from "../lock/maintenance-lock.js";
import { configDigest } from "../render/server-config.js";
import { preloadedAccounts } from "../render/preloaded-accounts.js";
import { accountInventory, type CorruptRecord } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { parseAccountRecord, parseBrokerRecord } from "../root/records.js";
import { readTextIfExists } from "../root/secret-files.js";
import { loadSettings } from "../root/settings.js";

/** The derived state, in the vocabulary of the inventory design (001 §8). */
export type DerivedState =
  | "absent" // no root here
  | "stopped"
  | "clean"
  | "SILENT EVICTION" // a tenant on disk is missing from the running config
  | "RESURRECTION RISK" // the running config preloads an account no record vouches for
  | "uncertain"; // a corrupt record: the tenant count is unknown

export interface SpaceStatus {
  name: string;
  publicKey: string;
  createdAt: string;
  inConfig: boolean;
}

export interface StatusReport {
  root: string;
  exists: boolean;
  state: DerivedState;
  broker: {
    running: boolean;
    pid?: number;
    url?: string;
    host?: string;
    port?: number;
    serverVersion?: string;
    startedAt?: string;
    detached?: boolean;
    staleRuntime: boolean;
  };
  operator?: string;
  multiSpace?: boolean;
  spaces: SpaceStatus[];
  corrupt: CorruptRecord[];
  configOnly: string[];
  configDigest?: string;
  lock: ReturnType<typeof readLockOwner> | null;
}

/** Reads everything without taking the lock or changing a byte: safe to run any time. */
export function status(opts: { root: string }): StatusReport {
  const layout = new RootLayout(opts.root);
  if (!existsSync(layout.root)) {
    return { root: layout.root, exists: false, state: "absent", broker: { running: false, staleRuntime: false }, spaces: [], corrupt: [], configOnly: [], lock: null };
  }
  const st = brokerState(layout);
  const rt = st.runtime;
  const inv = accountInventory(layout);
  const brokerText = readTextIfExists(layout.brokerFile);
  const brokerRec = brokerText === undefined ? undefined : parseBrokerRecord(brokerText);
  const corrupt = [...inv.corrupt];
  if (typeof brokerRec === "string") corrupt.push({ path: layout.brokerFile, reason: brokerRec });
  const authText = readTextIfExists(layout.authorityFile);
  const authority = authText === undefined ? undefined : parseAccountRecord(authText, { kind: "authority" });
  if (typeof authority === "string") corrupt.push({ path: layout.authorityFile, reason: authority });

  const conf = readTextIfExists(layout.serverConf);
  const preloaded = new Set(conf ? preloadedAccounts(conf) : []);
  const known = new Set(inv.spaces.map((s) => s.publicKey));
  if (typeof brokerRec === "object") known.add(brokerRec.system.publicKey);
  if (typeof authority === "object") known.add(authority.publicKey);
  const configOnly = [...preloaded].filter((k) => !known.has(k));
  const spaces = inv.spaces.map((s) => ({ name: s.name, publicKey: s.publicKey, createdAt: s.createdAt, inConfig: preloaded.has(s.publicKey) }));

  let state: DerivedState;
  if (corrupt.length > 0) state = "uncertain";
  else if (!st.running) state = "stopped";
  else if (spaces.some((s) => !s.inConfig)) state = "SILENT EVICTION";
  else if (configOnly.length > 0) state = "RESURRECTION RISK";
  else state = "clean";

  const settings = (() => {
    try {
      return loadSettings(layout);
    } catch {
      return undefined;
    }
  })();
  const lock = readLockOwner(layout.root);
  return {
    root: layout.root,
    exists: true,
    state,
    broker: {
      running: st.running,
      ...(rt ? { pid: rt.owner.pid, url: rt.url, host: rt.host, port: rt.port, serverVersion: rt.serverVersion, startedAt: rt.startedAt, detached: rt.detached } : settings ? { host: settings.host, port: settings.port } : {}),
      staleRuntime: !st.running && st.stale,
    },
    ...(typeof brokerRec === "object" ? { operator: brokerRec.operator.publicKey, multiSpace: brokerRec.multiSpace } : {}),
    spaces,
    corrupt,
    configOnly,
    ...(conf ? { configDigest: configDigest(conf) } : {}),
    lock: lock ?? null,
  };
}
