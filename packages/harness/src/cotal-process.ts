import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { monotonicMs } from "./clock.js";

/**
 * The monorepo root: the nearest ancestor of this file holding pnpm-workspace.yaml. Works from
 * both src/ (vitest) and dist/ (built), which sit at the same depth.
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "pnpm-workspace.yaml"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
}

/** `COTAL_CLI` when set, else <repo>/packages/cli/dist/bundle/cotal.js (the installed CLI: packages/cli/bundle.mjs). */
export function cotalCliPath(): string {
  return process.env.COTAL_CLI || join(repoRoot(), "packages", "cli", "dist", "bundle", "cotal.js");
}

export interface CotalRunOptions {
  /** Becomes COTAL_ROOT. */
  root: string;
  /** Added to (and overriding) the parent's environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** SIGKILL after this long; the result then has timedOut: true. Default 60 s. */
  timeoutMs?: number;
  /** Written to stdin, which is then closed. Without it stdin is /dev/null-like (closed at once). */
  input?: string;
  /**
   * Lowers the child's CPU priority (a nice value, 1-19) so a credential poll beside it keeps the
   * cores. A broker the child starts would inherit it: only for verbs that never start one.
   */
  niceness?: number;
}

export interface CotalResult {
  /** Exit code; null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

/** Starts `node <cli> ...args` with COTAL_ROOT set; for tests that kill a writer midway. */
export function spawnCotal(args: string[], opts: Omit<CotalRunOptions, "timeoutMs" | "input">): ChildProcess {
  const node = [process.execPath, cotalCliPath(), ...args];
  // Through nice(1), so every thread of the child starts at the lower priority (setPriority after
  // spawn would lower only the main thread on Linux, and only once it had started).
  const [cmd, ...argv] = opts.niceness === undefined ? node : ["nice", "-n", String(opts.niceness), ...node];
  return spawn(cmd as string, argv, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env, COTAL_ROOT: opts.root },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Runs the CLI to completion and collects its output. Never rejects for a non-zero exit. */
export function runCotal(args: string[], opts: CotalRunOptions): Promise<CotalResult> {
  const t0 = monotonicMs();
  const child = spawnCotal(args, opts);
  let stdout = "";
  let stderr = "";
  let timedOut = false;
  child.stdout?.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  // A CLI that exits before reading stdin makes the write fail with EPIPE; that is not our error.
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(opts.input ?? "");
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, opts.timeoutMs ?? 60_000);
  return new Promise<CotalResult>((resolvePromise, reject) => {
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, durationMs: monotonicMs() - t0, timedOut });
    });
  });
}
