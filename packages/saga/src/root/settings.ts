import { SagaError } from "../errors.js";
import type { RootLayout } from "./layout.js";
import { readTextIfExists, writeJsonAtomic } from "./secret-files.js";

/** Listener settings of a root: fixed at creation (nats-server cannot change them on reload). */
export interface RootSettings {
  format: "cotal.settings/1";
  host: string;
  port: number;
  serverName: string;
  createdAt: string;
  /** The JetStream budget (provision/quota-budget.ts); absent fields take its defaults. */
  jetstream?: Record<string, unknown>;
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
    throw new SagaError("corrupt-record", `${layout.settingsFile} is unusable`, { next: `repair ${layout.settingsFile} (host, port, serverName) and run the command again` });
  }
}

export function saveSettings(layout: RootLayout, s: RootSettings): void {
  writeJsonAtomic(layout.settingsFile, s);
}
