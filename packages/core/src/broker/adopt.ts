import { type Guards } from "../guards.js";
import { existsSync, readlinkSync, statSync } from "node:fs";
import { hostname } from "node:os";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists } from "../root/secret-files.js";
import { loadSettings } from "../root/settings.js";
import { natsServerBinary, natsServerVersion } from "./binary.js";
import { ownerOf, readRuntime, writeRuntime, type BrokerRuntime } from "./runtime.js";
import { serversOfRoot } from "./server-scan.js";

/** The `listen: "host:port"` line of a rendered server.conf (render/server-config.ts writes exactly one). */
export function listenOf(conf: string | undefined): { host: string; port: number } | undefined {
  const m = conf === undefined ? null : /^listen: "(.+):(\d+)"$/m.exec(conf);
  return m ? { host: m[1] as string, port: Number(m[2]) } : undefined;
}

/**
 * The runtime record of the one nats-server reading this root's server.conf, rebuilt from the live
 * process, when run/broker.json is there but unreadable (truncated, corrupt). Only then: an absent
 * record with a live server is a killed `up`'s stray, which `up` refuses and `down` stops. Reads only.
 */
export function adoptableBroker(layout: RootLayout, guards: Guards): Omit<BrokerRuntime, "format"> | undefined {
  if (guards.NO_BROKER_ADOPT || !existsSync(layout.runtimeFile) || readRuntime(layout) !== undefined) return undefined;
  const brokers = serversOfRoot(layout, guards).filter((s) => s.role === "broker");
  const pid = brokers.length === 1 ? brokers[0]?.pid : undefined;
  if (pid === undefined) return undefined;
  const settings = loadSettings(layout);
  const listen = listenOf(readTextIfExists(layout.serverConf)) ?? (settings ? { host: settings.host, port: settings.port } : undefined);
  if (!listen) return undefined;
  return {
    owner: ownerOf(pid, hostname()),
    url: `nats://${listen.host}:${listen.port}`,
    host: listen.host,
    port: listen.port,
    configPath: layout.serverConf,
    logFile: layout.logFile,
    serverVersion: runningVersion(pid),
    detached: true,
    startedAt: startedAt(pid),
  };
}

/** The version of the binary the process runs (its /proc exe), else of the binary cotal would start. */
function runningVersion(pid: number): string {
  let exe: string | undefined;
  try {
    exe = readlinkSync(`/proc/${pid}/exe`);
  } catch {
    exe = undefined;
  }
  return natsServerVersion(exe && existsSync(exe) ? exe : natsServerBinary()).raw;
}

function startedAt(pid: number): string {
  try {
    return statSync(`/proc/${pid}`).ctime.toISOString();
  } catch {
    return new Date().toISOString();
  }
}

/**
 * `up` on a running broker whose run/broker.json is unreadable: writes the rebuilt record so every
 * verb finds the broker again, with no restart (tenants stay connected). Under the maintenance lock.
 * Returns the note `up` prints, or undefined when there was nothing to adopt.
 */
export function adoptBroker(layout: RootLayout, rt: Omit<BrokerRuntime, "format">): string {
  writeRuntime(layout, rt);
  return `adopted the running nats-server pid ${rt.owner.pid} (${rt.url}): ${layout.runtimeFile} was unreadable and is rebuilt from the live process; no restart`;
}
