import { spawn } from "node:child_process";
import { DEFAULT_MAX_PAYLOAD, loadSettings, maxPayloadOf } from "../root/settings.js";
import { closeSync, openSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { createServer } from "node:net";
import { join } from "node:path";
import { SagaError } from "../errors.js";
import { pidAlive, type ProcessOwner } from "../lock/process-identity.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir, writeFileAtomic } from "../root/secret-files.js";
import { serverConfig } from "../render/server-config.js";
import { natsServerBinary, natsServerVersion } from "./binary.js";
import { serverFeatures } from "./server-features.js";
import { SERVER_READY, logOffset, readLogSince, tail, watchLog } from "./log-proof.js";
import { ownerOf } from "./runtime.js";
import { serversOfRoot } from "./server-scan.js";
import { failpoint } from "../failpoints.js";

export interface PrivateBroker {
  url: string;
  owner: ProcessOwner;
  stop(): Promise<void>;
}

/** Who a private broker is for: names its config, log and `<label>-started` failpoint. */
export type PrivateBrokerLabel = "maintenance" | "backup" | "clean" | "restore-quarantine" | "restore-target";

export interface PrivateBrokerOptions {
  /** The JetStream store it opens: the root's (broker stopped, lock held) or a clone. */
  storeDir: string;
  /** Where its config and logs go. */
  workDir: string;
  /** Tenants it preloads besides $SYS and the authority account; none for a maintenance broker. */
  spaces: AccountRecord[];
  label: PrivateBrokerLabel;
  /** Journals the child's pid for crash recovery, before it is even ready. */
  onSpawn?: (owner: ProcessOwner) => void;
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
 * A nats-server of cotal's own on a random loopback port (never the root's real one), preloading
 * only $SYS, the authority account and `spaces`. Maintenance brokers (no tenant: none can connect
 * while cotal reads the inventory) and isolated backup/restore brokers (one tenant) are both this.
 * The child is SIGKILLed if this process exits without stopping it.
 */
function rootMaxPayload(layout: RootLayout): number {
  const settings = loadSettings(layout);
  return settings ? maxPayloadOf(layout, settings) : DEFAULT_MAX_PAYLOAD;
}

export async function startPrivateBroker(layout: RootLayout, opts: PrivateBrokerOptions): Promise<PrivateBroker> {
  if (opts.storeDir === layout.storeDir) {
    const holders = serversOfRoot(layout).filter((s) => s.role === "broker" || s.role === "maintenance");
    if (holders.length > 0) {
      throw new SagaError("broker-running", `the store ${opts.storeDir} is held by nats-server ${holders.map((h) => `pid ${h.pid} (${h.config})`).join(", ")}; one server per store`, {
        exit: "cotal down   # stops every server of this root, then run the command again",
        details: { holders },
      });
    }
  }
  const port = await freeLoopbackPort();
  ensureSecretDir(opts.workDir);
  ensureSecretDir(opts.storeDir);
  const confPath = join(opts.workDir, `${opts.label}.conf`);
  const logFile = join(opts.workDir, `${opts.label}.log`);
  const bin = natsServerBinary();
  writeFileAtomic(confPath, serverConfig(loadBrokerTrust(layout), opts.spaces, {
    host: "127.0.0.1",
    port,
    serverName: `cotal-${opts.label}-${process.pid}`,
    storeDir: opts.storeDir,
    authority: loadAuthorityAccount(layout),
    logFile,
    // It writes the inventory too (cold-boot seed, offline sagas): the same record size and durability as the broker.
    maxPayload: rootMaxPayload(layout),
    syncAlways: serverFeatures(natsServerVersion(bin)).syncAlways,
    ...(opts.spaces.length === 0 ? { maintenance: true } : {}),
  }));
  const offset = logOffset(logFile);
  const umask = process.umask(0o077);
  const stdio = openSync(join(opts.workDir, `${opts.label}.stdio.log`), "a", 0o600);
  let child;
  try {
    child = spawn(bin, ["-c", confPath], { stdio: ["ignore", stdio, stdio] });
  } finally {
    process.umask(umask);
    closeSync(stdio);
  }
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  const reap = (): void => {
    if (!exited) child.kill("SIGKILL");
  };
  process.once("exit", reap);
  const pid = child.pid;
  if (pid !== undefined) opts.onSpawn?.(ownerOf(pid, hostname()));
  const stop = async (): Promise<void> => {
    if (pid !== undefined && !exited) {
      child.kill("SIGTERM");
      const deadline = Date.now() + 10_000;
      while (!exited && pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      if (!exited) child.kill("SIGKILL");
      while (!exited) await new Promise((r) => setTimeout(r, 10));
    }
    process.removeListener("exit", reap);
    rmSync(confPath, { force: true });
  };
  const ready = await watchLog(logFile, offset, { ready: SERVER_READY }, { timeoutMs: 20_000, idleTimeoutMs: 20_000, ...(pid !== undefined ? { pid } : {}), abort: () => exited });
  await failpoint(`${opts.label}-started`);
  if (!ready || pid === undefined) {
    await stop();
    throw new SagaError("broker-start-failed", `the ${opts.label} broker on ${opts.storeDir} did not start:\n${tail(readLogSince(logFile, offset))}`, { exit: `read ${logFile}` });
  }
  return { url: `nats://127.0.0.1:${port}`, owner: ownerOf(pid, hostname()), stop };
}
