import { spawn } from "node:child_process";
import { closeSync, openSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { SagaError } from "../errors.js";
import { pidAlive } from "../lock/process-identity.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, writeFileAtomic } from "../root/secret-files.js";
import { serverConfig } from "../render/server-config.js";
import { natsServerBinary } from "./binary.js";
import { SERVER_READY, logOffset, readLogSince, tail, watchLog } from "./log-proof.js";

export interface MaintenanceBroker {
  url: string;
  stop(): Promise<void>;
}

async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * A private nats-server on the root's store at a random loopback port, preloading only the authority
 * and system accounts: cotal can read and write the inventory while no tenant can connect. Used when
 * the real broker is down (cold boot). Only one process may run a server on a store: callers hold
 * the maintenance lock and have checked the real broker is stopped.
 */
export async function startMaintenanceBroker(layout: RootLayout): Promise<MaintenanceBroker> {
  const broker = loadBrokerTrust(layout);
  const authority = loadAuthorityAccount(layout);
  const port = await freeLoopbackPort();
  ensureSecretDir(layout.runDir);
  ensureSecretDir(layout.logDir);
  ensureSecretDir(layout.storeDir);
  const confPath = join(layout.runDir, "maintenance.conf");
  const logFile = join(layout.logDir, "maintenance.log");
  const text = serverConfig(broker, [], {
    host: "127.0.0.1",
    port,
    serverName: `cotal-maintenance-${process.pid}`,
    storeDir: layout.storeDir,
    authority,
    logFile,
    maintenance: true,
  });
  writeFileAtomic(confPath, text);
  const offset = logOffset(logFile);
  const umask = process.umask(0o077);
  const stdio = openSync(join(layout.logDir, "maintenance.stdio.log"), "a", 0o600);
  let child;
  try {
    child = spawn(natsServerBinary(), ["-c", confPath], { stdio: ["ignore", stdio, stdio] });
  } finally {
    process.umask(umask);
    closeSync(stdio);
  }
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  const ready = await watchLog(logFile, offset, { ready: SERVER_READY }, { timeoutMs: 15_000, abort: () => exited });
  const pid = child.pid;
  const stop = async (): Promise<void> => {
    if (pid !== undefined && !exited) {
      child.kill("SIGTERM");
      const deadline = Date.now() + 10_000;
      while (!exited && pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      if (!exited) child.kill("SIGKILL");
      while (!exited) await new Promise((r) => setTimeout(r, 10));
    }
    rmSync(confPath, { force: true });
  };
  if (!ready) {
    await stop();
    throw new SagaError("broker-start-failed", `the maintenance broker on ${layout.storeDir} did not start:\n${tail(readLogSince(logFile, offset))}`, {
      exit: `read ${logFile}`,
    });
  }
  return { url: `nats://127.0.0.1:${port}`, stop };
}
