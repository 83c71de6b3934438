import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./cotal-process.js";
import { parseCreds } from "./creds.js";
import { HarnessError } from "./errors.js";
import { monotonicMs } from "./clock.js";
import { handshakeTarget } from "./handshake.js";
import { STOPPED, type PollAttempt, type PollControl, type PollLoopConfig } from "./poll-loop.js";

/**
 * The poller's attempt loops as a Go child process (tools/credpoll, built by infra/credpoll.sh): the
 * same handshake as handshake.ts at about a third of Node's CPU per attempt, so on two loaded cores
 * the server, not the poller, bounds the density (docs/saga.md, the race/crash matrix).
 */

/** COTAL_CREDPOLL_BIN, else the repo's .tools/credpoll/credpoll; undefined when neither exists. */
export function credpollBinary(): string | undefined {
  const fromEnv = process.env.COTAL_CREDPOLL_BIN;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  const built = join(repoRoot(), ".tools", "credpoll", "credpoll");
  return existsSync(built) ? built : undefined;
}

/** The error class names of handshake.ts, by the code credpoll prints. */
const ERROR_NAMES: Record<string, string> = { auth: "AuthorizationError", proto: "ProtocolError", conn: "ConnectionError", timeout: "TimeoutError" };

/** One output line, `<startNs> <endNs> <code>[ <text>]`, as an attempt on monotonicMs()'s clock (both read CLOCK_MONOTONIC). */
export function parseCredpollLine(line: string): PollAttempt | undefined {
  const m = /^(\d+) (\d+) (ok|auth|proto|conn|timeout)(?: (.*))?$/.exec(line);
  if (!m) return undefined;
  const startedAt = Number(m[1]) / 1e6;
  const endedAt = Number(m[2]) / 1e6;
  if (m[3] === "ok") return { startedAt, endedAt, ok: true };
  return { startedAt, endedAt, ok: false, error: m[4] ?? m[3], errorName: ERROR_NAMES[m[3] as string] };
}

/**
 * Runs `concurrency` attempt loops in credpoll until the control says stop (then closes its stdin)
 * or a budget ends them; every attempt goes to `record`. The creds travel on the pipe, never in argv
 * or a file.
 */
export function runCredpoll(bin: string, cfg: PollLoopConfig, control: PollControl, concurrency: number, record: (a: PollAttempt) => void): Promise<void> {
  const { jwt, seed } = parseCreds(cfg.creds);
  const targets = (Array.isArray(cfg.url) ? cfg.url : [cfg.url]).map(handshakeTarget).map((t) => (t.host.includes(":") ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`));
  const remainingMs = Math.max(0, Math.round(cfg.maxDurationMs - (monotonicMs() - cfg.startedAt)));
  // Whole numbers, as credpoll reads them; 0 attempts or 0 ms left mean none, as in poll-loop.ts.
  const settings = {
    targets,
    jwt,
    seed,
    name: cfg.name,
    concurrency,
    timeoutMs: Math.max(1, Math.ceil(cfg.connectTimeoutMs)),
    intervalMs: Math.max(0, Math.ceil(cfg.intervalMs)),
    maxAttempts: Math.max(0, Math.floor(cfg.maxAttempts)),
    maxDurationMs: remainingMs,
  };
  return new Promise<void>((resolve, reject) => {
    const child = spawn(bin, [], { stdio: ["pipe", "pipe", "pipe"] });
    let buffered = "";
    let stderr = "";
    let done = false;
    let watch: NodeJS.Timeout | undefined;
    // Listeners first: a spawn that fails (EMFILE, a missing binary) reports through "error".
    child.on("error", (e) => {
      clearInterval(watch);
      Atomics.store(control, STOPPED, 1);
      reject(new HarnessError("invalid-state", `credpoll did not start (${bin}): ${e.message}`));
    });
    child.on("close", (code) => {
      clearInterval(watch);
      Atomics.store(control, STOPPED, 1); // a budget that ended credpoll ends the poller
      if (code === 0 && done) resolve();
      else reject(new HarnessError("invalid-state", `credpoll exited with code ${code}${stderr ? `: ${stderr.trim()}` : ""}`));
    });
    child.stdin?.on("error", () => undefined); // an early exit closes the pipe; "close" reports why
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      let i = buffered.indexOf("\n");
      while (i >= 0) {
        const line = buffered.slice(0, i);
        buffered = buffered.slice(i + 1);
        if (line === "done") done = true;
        else {
          const a = parseCredpollLine(line);
          if (a) record(a);
        }
        i = buffered.indexOf("\n");
      }
    });
    child.stdin?.write(`${JSON.stringify(settings)}\n`);
    watch = setInterval(() => {
      if (Atomics.load(control, STOPPED) === 1) child.stdin?.end();
    }, 5);
  });
}
