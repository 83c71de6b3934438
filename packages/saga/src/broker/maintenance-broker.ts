import { type Guards } from "../guards.js";
import type { RootLayout } from "../root/layout.js";
import { startPrivateBroker, type PrivateBroker } from "./private-broker.js";

export type MaintenanceBroker = PrivateBroker;

/**
 * The root's own store behind a private broker that preloads no tenant: cotal reads and writes the
 * inventory while nobody can connect (cold boot, offline reconcile, rotate-sys). Callers hold the
 * maintenance lock and have checked the real broker is stopped: one server per store.
 */
export function startMaintenanceBroker(layout: RootLayout, guards: Guards): Promise<MaintenanceBroker> {
  return startPrivateBroker(layout, { storeDir: layout.storeDir, workDir: layout.runDir, spaces: [], label: "maintenance", guards });
}
