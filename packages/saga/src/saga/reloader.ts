import type { BrokerRuntime } from "../broker/runtime.js";
import type { RootLayout } from "../root/layout.js";
import { reloadAndProve, type ReloadVerdict } from "./reload.js";

/**
 * What the saga needs from the running broker: reload the config at server.conf and return the
 * server's own verdict on it (docs/resume.md). Never the proof CAS: the saga writes that.
 */
export interface Reloader {
  reload(opts?: { timeoutMs?: number }): Promise<ReloadVerdict>;
}

/** The running broker of a root: the RELOAD request (2.10+) or SIGHUP, proven as saga/reload.ts says. */
export function brokerReloader(runtime: BrokerRuntime, layout?: RootLayout): Reloader {
  return { reload: (opts = {}) => reloadAndProve(runtime, { ...opts, ...(layout ? { layout } : {}) }) };
}
