import { preloadedAccounts } from "./preloaded-accounts.js";
import type { AccountRecord } from "../root/records.js";

/** What the config on disk preloads, held against the records that vouch for accounts. */
export interface ConfigPicture {
  /** Disk tenants whose account the config preloads. */
  preloadedNames: string[];
  /** Preloaded account keys no record vouches for (RESURRECTION RISK). */
  unknownKeys: string[];
}

/** Pure: one reading of server.conf for status and reconcile alike. `vouched` are $SYS and the authority. */
export function configPicture(conf: string | undefined, disk: readonly AccountRecord[], vouched: readonly string[]): ConfigPicture {
  const preloaded = new Set(conf ? preloadedAccounts(conf) : []);
  const known = new Set([...disk.map((s) => s.publicKey), ...vouched]);
  return {
    preloadedNames: disk.filter((s) => preloaded.has(s.publicKey)).map((s) => s.name),
    unknownKeys: [...preloaded].filter((k) => !known.has(k)),
  };
}
