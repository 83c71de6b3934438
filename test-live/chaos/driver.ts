import { natsServerBinary } from "@cotal/core/server-process";
import { monotonicMs, runCotal, spawnCotal, type CotalResult } from "@cotal/harness";
import { serversOf, sigkill, waitGone, type ServerProc } from "./procs.js";

export interface StepLog {
  phase: "setup" | "verb" | "recover" | "intent" | "check";
  argv: string[];
  code: number | null;
  signal: string | null;
  /** ms since the run began. */
  at: number;
  ms: number;
  stdout: string;
  stderr: string;
}

export interface KillPlan {
  target: "cotal" | "nats";
  /** ms after the verb's spawn. */
  atMs: number;
}

export interface KillRecord {
  planned: KillPlan;
  /** What was killed: "cotal pid N", "nats-server pid N (broker)", or why nothing was. */
  what: string;
  /** ms after the verb's spawn at which the SIGKILL was sent; undefined when nothing was killed. */
  firedAtMs: number | undefined;
  /** monotonicMs() of the SIGKILL (or of the verb's end when nothing was killed). */
  mono: number;
}

/**
 * CHAOS_NATS_SERVER_BIN, else the server cotal itself would run (NATS_SERVER_BIN, else the newest
 * release the set-up built, else the distribution's: docs/server-versions.md), handed to every child.
 */
export function chaosServerBin(): string {
  return process.env.CHAOS_NATS_SERVER_BIN ?? natsServerBinary();
}

const ENV = { NATS_SERVER_BIN: chaosServerBin() };

/** One run's cotal invocations, each logged with its output so a failure can be replayed by hand. */
export class Driver {
  readonly steps: StepLog[] = [];
  private readonly t0 = monotonicMs();

  constructor(
    readonly root: string,
    private readonly pick: <T>(items: readonly T[]) => T,
  ) {}

  elapsed(): number {
    return Math.round(monotonicMs() - this.t0);
  }

  async cotal(phase: StepLog["phase"], argv: string[], timeoutMs = 120_000): Promise<CotalResult> {
    const at = this.elapsed();
    const res = await runCotal(argv, { root: this.root, env: ENV, timeoutMs });
    this.steps.push({ phase, argv, code: res.code, signal: res.signal, at, ms: Math.round(res.durationMs), stdout: res.stdout, stderr: res.stderr });
    return res;
  }

  /** Must exit 0, else the run is broken before chaos even began. */
  async ok(phase: StepLog["phase"], argv: string[]): Promise<CotalResult> {
    const res = await this.cotal(phase, argv);
    if (res.code !== 0) throw new SetupError(`cotal ${argv.join(" ")} exited ${res.code}: ${res.stderr.trim()}`);
    return res;
  }

  /**
   * Runs the verb and SIGKILLs the planned target at the planned moment (no kill when plan is
   * undefined: the calibration run). A nats target is drawn among the root's servers alive then.
   */
  async verb(argv: string[], plan: KillPlan | undefined): Promise<{ res: CotalResult; kill: KillRecord | undefined }> {
    const at = this.elapsed();
    const t0 = monotonicMs();
    const child = spawnCotal(argv, { root: this.root, env: ENV });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.stdin?.on("error", () => undefined);
    child.stdin?.end("");
    let exited = false;
    const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("close", (code, signal) => {
        exited = true;
        resolve({ code, signal });
      }),
    );
    let kill: KillRecord | undefined;
    let fired: Promise<void> = Promise.resolve();
    if (plan) {
      fired = new Promise<void>((resolveFired) =>
        setTimeout(() => {
          void this.fire(plan, t0, () => (exited ? undefined : child.pid)).then((k) => {
            kill = k;
            resolveFired();
          });
        }, plan.atMs),
      );
    }
    const hard = setTimeout(() => child.kill("SIGKILL"), 180_000);
    const { code, signal } = await done;
    const durationMs = monotonicMs() - t0;
    clearTimeout(hard);
    // a verb that ended before the planned moment still gets its kill then (of whatever is alive)
    await fired;
    const res: CotalResult = { code, signal, stdout, stderr, durationMs, timedOut: false };
    this.steps.push({ phase: "verb", argv, code, signal, at, ms: Math.round(durationMs), stdout, stderr });
    return { res, kill };
  }

  /**
   * A nats target with no server of the root alive at the planned moment (a cut whose broker already
   * stopped, a backup before its isolated broker started) is the first one seen afterwards while the
   * verb still runs; only when none appears before the verb exits is nothing killed.
   */
  private async fire(plan: KillPlan, t0: number, cotalPid: () => number | undefined): Promise<KillRecord> {
    if (plan.target === "cotal") {
      const pid = cotalPid();
      if (pid === undefined) return { planned: plan, what: "nothing: the verb had already exited", firedAtMs: undefined, mono: monotonicMs() };
      sigkill(pid);
      return { planned: plan, what: `cotal pid ${pid}`, firedAtMs: Math.round(monotonicMs() - t0), mono: monotonicMs() };
    }
    let servers: ServerProc[] = serversOf(this.root);
    while (servers.length === 0 && cotalPid() !== undefined) {
      await new Promise((r) => setTimeout(r, 5));
      servers = serversOf(this.root);
    }
    const after = cotalPid() === undefined ? " (the verb had already exited)" : "";
    if (servers.length === 0) return { planned: plan, what: "nothing: no nats-server of this root was alive from the planned moment to the verb's exit", firedAtMs: undefined, mono: monotonicMs() };
    const s = this.pick(servers);
    sigkill(s.pid);
    const firedAtMs = Math.round(monotonicMs() - t0);
    await waitGone(s.pid);
    return { planned: plan, what: `nats-server pid ${s.pid} (${s.kind}: ${s.config})${after}`, firedAtMs, mono: monotonicMs() };
  }

}

/** The run could not even be set up (not a finding about the verb under chaos). */
export class SetupError extends Error {}
