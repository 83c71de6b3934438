import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { CotalError } from "../errors.js";
import { SERVER_READY, watchLog } from "./log-proof.js";

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A spawned nats-server: `done` flips synchronously on exit, so liveness checks never lag the event. */
export interface ServerChild {
  child: ChildProcess;
  pid: number;
  readonly done: boolean;
  exited: Promise<ServerExit>;
}

export interface SpawnServerOptions {
  /** stdout/stderr: appended to this file (created 0600), or piped to the caller. */
  output: string | "pipe";
  detached?: boolean;
  /** Run under umask 077 (its log, pid file and store hold tenant data). Default true. */
  privateFiles?: boolean;
}

/**
 * Spawns `bin args` and resolves once it has a pid. A binary that cannot be executed is the same
 * typed refusal as a bad NATS_SERVER_BIN (`nats-server-missing`, naming the path).
 */
export async function spawnServer(bin: string, args: readonly string[], opts: SpawnServerOptions): Promise<ServerChild> {
  const umask = opts.privateFiles === false ? undefined : process.umask(0o077);
  const out = opts.output === "pipe" ? "pipe" : openSync(opts.output, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(bin, [...args], { detached: opts.detached ?? false, stdio: ["ignore", out, out] });
  } finally {
    if (umask !== undefined) process.umask(umask);
    if (typeof out === "number") closeSync(out);
  }
  let done = false;
  const exited = new Promise<ServerExit>((resolve) => {
    child.once("exit", (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once("error", resolve);
    child.once("spawn", () => resolve(undefined));
  });
  if (spawnError || child.pid === undefined) {
    throw new CotalError("nats-server-missing", `could not spawn ${bin}: ${spawnError?.message ?? "no pid"}`, {
      next: "point NATS_SERVER_BIN at a nats-server binary, or apt-get install -y nats-server",
      details: { path: bin },
    });
  }
  const pid = child.pid;
  return {
    child,
    pid,
    exited,
    get done() {
      return done;
    },
  };
}

/**
 * Until this child's own "Server is ready" after `offset` of `logFile` (another pid's line proves
 * nothing). Only silence times it out, not a long restore that keeps logging. False on exit or timeout.
 */
export async function untilReady(server: ServerChild, logFile: string, offset: number, timeoutMs: number): Promise<boolean> {
  const seen = await watchLog(logFile, offset, { ready: SERVER_READY }, { timeoutMs, idleTimeoutMs: timeoutMs, pid: server.pid, abort: () => server.done });
  return seen !== undefined;
}
