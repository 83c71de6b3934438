import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { loadBrokerTrust, type LoadedBroker } from "../root/broker-store.js";
import { certainInventory, loadAuthorityAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { loadSettings, maxPayloadOf, type RootSettings } from "../root/settings.js";
import { configDigest, serverConfig, type RenderOptions } from "../render/server-config.js";
import { renderFeatures } from "./render-features.js";
import { nodeInputs, renderNodeFrom } from "./node-material.js";
import { effectiveBudget } from "./jetstream-max.js";
import { heldSpaces } from "./node-hold.js";

export interface RenderedRoot {
  text: string;
  digest: string;
  broker: LoadedBroker;
  authority: AccountRecord;
  spaces: AccountRecord[];
  settings: RootSettings;
}

/**
 * Renders server.conf from the whole validated inventory re-read from disk (never a remembered list),
 * plus broker trust and the authority account. Refuses on any uncertainty.
 */
export function renderRoot(layout: RootLayout, spaces: AccountRecord[] | undefined, guards: Guards): RenderedRoot {
  const broker = loadBrokerTrust(layout);
  const authority = loadAuthorityAccount(layout);
  const settings = loadSettings(layout);
  if (!settings) throw new CotalError("corrupt-record", `${layout.settingsFile} is missing`, { next: `restore ${layout.settingsFile} (host, port, serverName) from a backup` });
  const list = spaces ?? certainInventory(layout, guards);
  if (list.length === 0) {
    throw new CotalError("render-refused", `the root ${layout.root} holds no space, and a config with zero spaces would evict every tenant`, {
      next: "restore an auth/account.<hex>.json record from a backup, or start a fresh root with `cotal up --root <new dir>`",
    });
  }
  const text = serverConfig(broker, list, {
    host: settings.host,
    port: settings.port,
    serverName: settings.serverName,
    storeDir: layout.storeDir,
    logFile: layout.logFile,
    pidFile: layout.pidFile,
    ...sharedOptions(layout, settings, authority, guards),
  });
  return { text, digest: configDigest(text), broker, authority, spaces: list, settings };
}

/** What every server of a root renders alike, the single broker and each cluster node. */
function sharedOptions(layout: RootLayout, settings: RootSettings, authority: AccountRecord, guards: Guards): Pick<RenderOptions, "maxPayload" | "authority" | "syncAlways" | "jetstreamMax"> {
  const features = renderFeatures(layout);
  const { render: jetstreamMax } = effectiveBudget(layout, guards);
  return { maxPayload: maxPayloadOf(layout, settings), authority, syncAlways: features.syncAlways, ...(jetstreamMax ? { jetstreamMax } : {}) };
}

/**
 * One cluster node's config (docs/cluster.md), rendered from the root's public material
 * (broker/node-material.ts, its one home): the same trust and tenant list as the root's server.conf,
 * that node's listener, store, log and `cluster {}` block. `maintenance` is the boot before the node
 * has read the committed record: it admits no tenant, and preloads every tenant on disk held
 * (broker/node-hold.ts) so JetStream recovers their streams' assignments at boot.
 */
export function renderNode(layout: RootLayout, node: string, spaces: AccountRecord[], opts: { maintenance?: boolean; guards?: Guards } = {}): { text: string; digest: string } {
  if (opts.maintenance && spaces.length > 0) throw new CotalError("render-refused", "a node's maintenance config takes no tenant list: it holds every tenant on disk", { next: `cotal status --root ${layout.root}` });
  const guards = opts.guards ?? GUARDS_ON;
  const { base, local } = nodeInputs(layout, node, guards);
  return renderNodeFrom(base, node, opts.maintenance ? { held: guards.CLUSTER_BOOT_BARE ? [] : heldSpaces(layout) } : spaces, local, guards);
}

export { renderFeatures } from "./render-features.js";
