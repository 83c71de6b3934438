import { RERUN, CotalError } from "../errors.js";
import type { RootLayout } from "./layout.js";
import { clusterOf, type ClusterSettings } from "./cluster-settings.js";
import { readTextIfExists, writeJsonAtomic } from "./secret-files.js";

/** Listener settings of a root: fixed at creation (nats-server cannot change them on reload). */
export interface RootSettings {
  format: "cotal.settings/1";
  host: string;
  port: number;
  serverName: string;
  createdAt: string;
  /** The JetStream budget (broker/quota-budget.ts); absent fields take its defaults. */
  jetstream?: Record<string, unknown>;
  /** server.conf `max_payload` in bytes (default {@link DEFAULT_MAX_PAYLOAD}); bounds every inventory record write. */
  maxPayload?: number;
  /** A cluster root only (`cotal up --cluster N`): its nodes and ports, fixed at creation (root/cluster-settings.ts). */
  cluster?: ClusterSettings;
}

/**
 * The inventory record must fit one message: 8 MiB is the most nats-server takes without warning
 * (its hard cap is max_pending, 64 MiB by default). Tenants keep their own 1 MiB quota (README "Quotas").
 */
export const DEFAULT_MAX_PAYLOAD = 8 * 1024 ** 2;
/** Below this the authority buckets' own API requests stop fitting. */
export const MIN_MAX_PAYLOAD = 4096;
export const MAX_MAX_PAYLOAD = 64 * 1024 ** 2;

/** The max_payload a root renders: settings.json's `maxPayload`, checked, or the default. */
export function maxPayloadOf(layout: RootLayout, s: RootSettings): number {
  const v = s.maxPayload;
  if (v === undefined) return DEFAULT_MAX_PAYLOAD;
  if (!Number.isSafeInteger(v) || v < MIN_MAX_PAYLOAD || v > MAX_MAX_PAYLOAD) {
    throw new CotalError("corrupt-record", `${layout.settingsFile}: maxPayload ${JSON.stringify(v)} is not a byte count between ${MIN_MAX_PAYLOAD} and ${MAX_MAX_PAYLOAD}`, {
      next: `set "maxPayload" in ${layout.settingsFile} to bytes between ${MIN_MAX_PAYLOAD} and ${MAX_MAX_PAYLOAD} (or remove it for ${DEFAULT_MAX_PAYLOAD}), then: ${RERUN}`,
      details: { maxPayload: v },
    });
  }
  return v;
}

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 4222;

export function loadSettings(layout: RootLayout): RootSettings | undefined {
  const text = readTextIfExists(layout.settingsFile);
  if (text === undefined) return undefined;
  try {
    const s = JSON.parse(text) as RootSettings;
    if (s.format !== "cotal.settings/1" || typeof s.port !== "number" || typeof s.host !== "string" || typeof s.serverName !== "string") throw new Error("fields");
    return s;
  } catch {
    throw new CotalError("corrupt-record", `${layout.settingsFile} is unusable`, { next: `repair ${layout.settingsFile} (host, port, serverName), then: ${RERUN}` });
  }
}

export function saveSettings(layout: RootLayout, s: RootSettings): void {
  writeJsonAtomic(layout.settingsFile, s);
}

/** Does this root run as a cluster (settings.json `cluster`)? `up` boots its nodes with or without the flag. */
export function isClusterRoot(layout: RootLayout): boolean {
  return clusterOf(layout, loadSettings(layout)) !== undefined;
}
