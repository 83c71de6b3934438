import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { hostname } from "node:os";
import { SagaError } from "../errors.js";
import { pidAlive } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, readTextIfExists } from "../root/secret-files.js";
import { natsServerBinary, natsServerVersion } from "./binary.js";
import { SERVER_READY, logOffset, readLogSince, tail, watchLog } from "./log-proof.js";
import { brokerState, clearRuntime, ownerOf, writeRuntime, type BrokerRuntime } from "./runtime.js";

export interface StartOptions {
  host: string;
  port: number;
  detach: boolean;
  readyTimeoutMs?: number;
}

export interface StartedBroker {
  runtime: BrokerRuntime;
  /** Foreground only: the child, so the caller can wait on it and forward signals. */
  child?: ChildProcess;
}

/**
 * Starts nats-server on the root's rendered config and waits for "Server is ready" in the log it
 * writes after our spawn. An early exit or a timeout refuses with the log tail.
 */
export async function startBroker(layout: RootLayout, opts: StartOptions): Promise<StartedBroker> {
  const bin = natsServerBinary();
  const version = natsServerVersion(bin);
  ensureSecretDir(layout.logDir);
  ensureSecretDir(layout.runDir);
  ensureSecretDir(layout.storeDir);
  const offset = logOffset(layout.logFile);
  const stdioOffset = logOffset(layout.stdioLogFile);
  const stdio = openSync(layout.stdioLogFile, "a", 0o600);
  let child: ChildProcess;
  // The broker inherits umask 077: its log, pid file and store hold tenant data and stay private.
  const umask = process.umask(0o077);
  try {
    child = spawn(bin, ["-c", layout.serverConf], { detached: opts.detach, stdio: ["ignore", stdio, stdio] });
  } finally {
    process.umask(umask);
    closeSync(stdio);
  }
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.once("exit", (code, signal) => {
    exited = { code, signal };
  });
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once("error", resolve);
    child.once("spawn", () => resolve(undefined));
  });
  if (spawnError || child.pid === undefined) {
    throw new SagaError("broker-start-failed", `could not spawn ${bin}: ${spawnError?.message ?? "no pid"}`, { exit: "apt-get install -y nats-server" });
  }
  const ready = await watchLog(layout.logFile, offset, { ready: SERVER_READY }, { timeoutMs: opts.readyTimeoutMs ?? 20_000, abort: () => exited !== undefined });
  if (!ready) {
    if (!exited) child.kill("SIGKILL");
    const logs = `${tail(readLogSince(layout.logFile, offset))}\n${tail(readLogSince(layout.stdioLogFile, stdioOffset))}`.trim();
    throw new SagaError("broker-start-failed", `nats-server did not become ready${exited ? ` (exited with ${exited.code ?? exited.signal})` : " in time"}:\n${logs}`, {
      exit: `read ${layout.logFile}; if the port is taken, stop what holds ${opts.host}:${opts.port} and run \`cotal up\` again`,
      details: { logFile: layout.logFile },
    });
  }
  if (opts.detach) child.unref();
  const runtime = writeRuntime(layout, {
    owner: ownerOf(child.pid, hostname()),
    url: `nats://${opts.host}:${opts.port}`,
    host: opts.host,
    port: opts.port,
    configPath: layout.serverConf,
    logFile: layout.logFile,
    serverVersion: version.raw,
    detached: opts.detach,
    startedAt: new Date().toISOString(),
  });
  return opts.detach ? { runtime } : { runtime, child };
}

/** SIGTERM, then SIGKILL after the grace period; clears the runtime record either way. */
export async function stopBroker(layout: RootLayout, graceMs = 15_000): Promise<{ stopped: boolean; pid?: number; forced: boolean }> {
  const state = brokerState(layout);
  if (!state.running) {
    clearRuntime(layout);
    return { stopped: false, forced: false };
  }
  const pid = state.runtime.owner.pid;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  let forced = false;
  if (pidAlive(pid)) {
    forced = true;
    process.kill(pid, "SIGKILL");
    while (pidAlive(pid)) await new Promise((r) => setTimeout(r, 10));
  }
  clearRuntime(layout);
  return { stopped: true, pid, forced };
}

export function readPidFile(layout: RootLayout): number | undefined {
  const t = readTextIfExists(layout.pidFile)?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}
