import { type Guards } from "../guards.js";
import { rmSync } from "node:fs";
import { DEFAULT_MAX_PAYLOAD, loadSettings, maxPayloadOf } from "../root/settings.js";
import { hostname } from "node:os";
import { join } from "node:path";
import { RERUN, CotalError, isCotalError } from "../errors.js";
import type { ProcessOwner } from "../lock/process-identity.js";
import { loadAuthorityAccount } from "../root/account-store.js";
import { loadBrokerTrust } from "../root/broker-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";
import { ensureSecretDir, writeFileAtomic } from "../root/secret-files.js";
import { serverConfig } from "../render/server-config.js";
import { natsServerBinary, natsServerVersion } from "./binary.js";
import { serverFeatures } from "./server-features.js";
import { freePort } from "./free-port.js";
import { logOffset, readLogSince, tail } from "./log-proof.js";
import { spawnServer, untilReady } from "./spawn-server.js";
import { stopProcess } from "./stop-process.js";
import { ownerOf } from "./runtime.js";
import { serversOfRoot } from "./server-scan.js";
import { failpoint, FailpointError } from "../failpoints.js";

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
  /** Tenants it preloads besides $SYS and the authority account: none to read the inventory, one for a backup or restore. */
  spaces: AccountRecord[];
  label: PrivateBrokerLabel;
  /** Journals the child's pid for crash recovery, before it is even ready. */
  onSpawn?: (owner: ProcessOwner) => void;
  /** The verb's guards (IGNORE_STRAYS; docs/ablation.md). */
  guards: Guards;
}

/** The root's max_payload (settings.json), which the private broker must share: it writes the same records. */
function rootMaxPayload(layout: RootLayout): number {
  const settings = loadSettings(layout);
  return settings ? maxPayloadOf(layout, settings) : DEFAULT_MAX_PAYLOAD;
}

/**
 * A private broker (docs/vocabulary.md): a nats-server of cotal's own on a random loopback port (never
 * the root's real one), preloading only $SYS, the authority account and `spaces`. With no space (a cold
 * boot's or an offline verb's read of the inventory: nobody can connect) or one (an offline backup or
 * restore of that space: no other tenant's streams are opened). The child is SIGKILLed if this process
 * exits without stopping it.
 */
export async function startPrivateBroker(layout: RootLayout, opts: PrivateBrokerOptions): Promise<PrivateBroker> {
  if (opts.storeDir === layout.storeDir) {
    const holders = serversOfRoot(layout, opts.guards).filter((s) => s.role === "broker" || s.role === "maintenance");
    if (holders.length > 0) {
      throw new CotalError("broker-running", `the store ${opts.storeDir} is held by nats-server ${holders.map((h) => `pid ${h.pid} (${h.config})`).join(", ")}; one server per store`, {
        next: `cotal down && ${RERUN}   # down stops every server of this root`,
        details: { holders },
      });
    }
  }
  const port = await freePort();
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
  const server = await spawnServer(bin, ["-c", confPath], { output: join(opts.workDir, `${opts.label}.stdio.log`) });
  const reap = (): void => {
    if (!server.done) server.child.kill("SIGKILL");
  };
  process.once("exit", reap);
  const pid = server.pid;
  opts.onSpawn?.(ownerOf(pid, hostname()));
  const stop = async (): Promise<void> => {
    if (!server.done) await stopProcess(pid, 10_000, () => server.done);
    process.removeListener("exit", reap);
    rmSync(confPath, { force: true });
  };
  const ready = await untilReady(server, logFile, offset, 20_000);
  await failpoint(`${opts.label}-started`);
  if (!ready) {
    await stop();
    throw new CotalError("broker-start-failed", `the ${opts.label} broker on ${opts.storeDir} did not start:\n${tail(readLogSince(logFile, offset))}`, { next: `tail -n 40 ${logFile}   # the server's reason; then ${RERUN}` });
  }
  return { url: `nats://127.0.0.1:${port}`, owner: ownerOf(pid, hostname()), stop };
}

/**
 * What reaches the operator when a private broker's connection fails mid-attempt (the broker was
 * killed, say): a typed `snapshot-failed` with the re-run, never an untyped client error and exit 1.
 */
export function typedPrivateBrokerFailure(err: unknown, rerun: string): unknown {
  if (isCotalError(err) || err instanceof FailpointError) return err;
  return new CotalError("snapshot-failed", `the private broker's connection failed mid-attempt: ${(err as Error)?.message ?? String(err)}; the attempt was undone and nothing was published`, {
    next: rerun,
    cause: err,
  });
}
