/**
 * Every space's state and quota against its use in one read, for the metrics exporter
 * (docs/metrics.md): status once, each record's quota, and `space info`'s own reader
 * (readSpaceUsage), a few accounts at a time. Read-only: no lock, no journal, no write.
 */
import { GUARDS_ON, type Guards } from "../guards.js";
import { brokerState } from "../broker/runtime.js";
import { mapPool } from "../pool.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { limitsQuota, type SpaceQuota } from "../trust/limits.js";
import { answeringUrls } from "../verb/session.js";
import { readSpaceUsage, type SpaceUsage } from "./space-info.js";
import { spaceListFrom, type SpaceState } from "./space-list.js";
import { reachedFirst, status, type StatusReport } from "./status.js";

export interface SpaceUsageRow {
  space: string;
  state: SpaceState;
  /** The record's quota (null: no record on disk). */
  quota: SpaceQuota | null;
  /** What the server counts now (null: broker stopped, no record, or the read failed). */
  usage: SpaceUsage | null;
}

export interface SpaceUsagesReport {
  status: StatusReport;
  spaces: SpaceUsageRow[];
  /** Spaces with a record whose usage could not be read, each with the reason. */
  unread: { space: string; reason: string }[];
}

export interface SpaceUsagesOptions {
  root: string;
  guards?: Guards;
  /** Accounts read at once (default 8): each read is one short-lived connection of that account. */
  concurrency?: number;
  /** false: states and quotas only, no connection to the broker. */
  usage?: boolean;
  /** The usage reader (tests hand in a fake; the default is `space info`'s). */
  readUsage?: (urls: readonly string[], rec: AccountRecord) => Promise<SpaceUsage>;
}

/** Every space with its state, quota and use. A read that fails leaves that space's usage null. */
export async function spaceUsages(opts: SpaceUsagesOptions): Promise<SpaceUsagesReport> {
  const s = await status({ root: opts.root, guards: opts.guards ?? GUARDS_ON });
  const layout = new RootLayout(s.root);
  const runtime = s.exists ? brokerState(layout).runtime : undefined;
  const urls = s.broker.running && runtime ? reachedFirst(s, answeringUrls(runtime)) : [];
  const read = opts.readUsage ?? readSpaceUsage;
  const unread: SpaceUsagesReport["unread"] = [];
  const spaces = await mapPool(spaceListFrom(s).spaces, opts.concurrency ?? 8, async (e): Promise<SpaceUsageRow> => {
    const rec = s.exists ? loadSpaceAccount(layout, e.name) : undefined;
    let usage: SpaceUsage | null = null;
    if (rec && urls.length > 0 && opts.usage !== false) {
      try {
        usage = await read(urls, rec);
      } catch (err) {
        unread.push({ space: e.name, reason: (err as Error).message });
      }
    }
    return { space: e.name, state: e.state, quota: rec ? limitsQuota(rec.limits) : null, usage };
  });
  return { status: s, spaces, unread };
}
