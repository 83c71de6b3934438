import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { harnessTeardown, parseUnitFile, repoRoot, restartsOnFailure, unitEnvironment, unitExecStart, unitFailed, unitValue, type UnitFile } from "@cotal/harness";
import { readRuntime } from "@cotal/core/broker";
import { alive } from "../fixtures/processes.js";
import { disposeLiveRoots, statusOf, trackedRoot } from "../fixtures/tenants.js";
import { until } from "../fixtures/until.js";
import type { LiveRoot } from "../fixtures/live-root.js";

// The shipped broker unit's own command line under a supervisor that keeps systemd's rules for this
// unit (KillMode=, KillSignal=, Restart=on-failure, RestartSec=): `systemctl stop` and `cotal down`
// end it cleanly and nothing restarts it; a nats-server killed -9 fails it and it comes back
// (docs/service.md). Only the install paths are moved: /usr/bin/node, /opt/cotal, /var/lib/cotal.
const UNIT_PATH = join(repoRoot(), "infra", "systemd", "cotal-broker.service");
const unit: UnitFile = parseUnitFile(readFileSync(UNIT_PATH, "utf8"));

afterEach(disposeLiveRoots);
afterAll(harnessTeardown);

interface End {
  code: number | null;
  signal: NodeJS.Signals | null;
  stopRequested: boolean;
}

/** One run of ExecStart=: the process, what it printed, and how it ended. */
interface Run {
  child: ChildProcess;
  output: () => string;
  ended: Promise<End>;
}

/** A supervisor-like wrapper: starts the unit's command, stops it as systemd would, restarts on failure. */
class Supervisor {
  readonly runs: Run[] = [];
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly argv: string[],
    private readonly env: Record<string, string>,
    private readonly cwd: string,
  ) {}

  start(): Run {
    const [cmd, ...args] = this.argv;
    // Its own process group: KillMode=control-group signals every process of the unit.
    const child = spawn(cmd as string, args, { cwd: this.cwd, env: { ...process.env, ...this.env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let text = "";
    child.stdout?.on("data", (d: Buffer) => (text += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (text += d.toString()));
    const ended = new Promise<End>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal, stopRequested: this.stopping })));
    const run = { child, output: () => text, ended };
    this.runs.push(run);
    void ended.then((end) => {
      if (!restartsOnFailure(end)) return;
      this.restartTimer = setTimeout(() => this.start(), seconds(unitValue(unit, "Service", "RestartSec") ?? "0.1") * 1000);
    });
    return run;
  }

  /** `systemctl stop`: KillSignal= to the main process (KillMode=mixed) or the whole group, then wait. */
  async stop(run: Run): Promise<End> {
    this.stopping = true;
    const sig = (unitValue(unit, "Service", "KillSignal") ?? "SIGTERM") as NodeJS.Signals;
    const mode = unitValue(unit, "Service", "KillMode") ?? "control-group";
    process.kill(mode === "control-group" ? -(run.child.pid as number) : (run.child.pid as number), sig);
    return run.ended;
  }

  dispose(): void {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    for (const r of this.runs) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
  }
}

function seconds(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|ms)?$/.exec(text);
  if (!m) throw new Error(`unsupported time span ${text}`);
  return Number(m[1]) / (m[2] === "ms" ? 1000 : 1);
}

/** The unit's ExecStart=, Environment= and WorkingDirectory= with the install paths moved to this checkout and root. */
function supervisorFor(r: LiveRoot): Supervisor {
  const stateDir = `/var/lib/${unitValue(unit, "Service", "StateDirectory")}`;
  const move = (s: string): string => s.replace(/^\/usr\/bin\/node$/, process.execPath).replaceAll("/opt/cotal", repoRoot()).replaceAll(stateDir, r.root);
  const argv = unitExecStart(unit).map(move);
  const env = Object.fromEntries(Object.entries(unitEnvironment(unit)).map(([k, v]) => [k, move(v)]));
  return new Supervisor(argv, env, move(unitValue(unit, "Service", "WorkingDirectory") ?? "/"));
}

const ready = (run: Run): Promise<true> => until("the foreground up serving", () => run.output().includes("running in the foreground") || undefined, 30_000, 50);

/** A root whose port is this test's (a new root would take 4222): made once on it, then stopped. */
async function preparedRoot(): Promise<LiveRoot> {
  const r = await trackedRoot("cotal-systemd-");
  const made = await r.cotal(["up", "--port", String(r.port), "--detach"]);
  expect(made.code, made.stderr).toBe(0);
  expect((await r.cotal(["down"])).code).toBe(0);
  return r;
}

describe("the broker unit under a supervisor (systemd's rules)", () => {
  it("the unit's command line is the foreground up on its state directory, restarted on failure only", () => {
    expect(unitExecStart(unit).slice(-3)).toEqual(["up", "--root", `/var/lib/${unitValue(unit, "Service", "StateDirectory")}`]);
    expect(unitEnvironment(unit).COTAL_ROOT).toBe(`/var/lib/${unitValue(unit, "Service", "StateDirectory")}`);
    expect(unitValue(unit, "Service", "Restart")).toBe("on-failure");
  });

  it("systemctl stop (SIGTERM): up exits 0, the unit is not failed, nothing restarts, the broker is stopped", async () => {
    const r = await preparedRoot();
    const sup = supervisorFor(r);
    try {
      const run = sup.start();
      await ready(run);
      const pid = readRuntime(r.layout)?.owner.pid as number;
      const end = await sup.stop(run);
      expect(end.code, run.output()).toBe(0);
      expect(unitFailed(end)).toBe(false);
      expect(alive(pid)).toBe(false);
      expect((await statusOf(r)).broker).toMatchObject({ running: false, staleRuntime: false });
      expect(sup.runs).toHaveLength(1);
    } finally {
      sup.dispose();
    }
  });

  it("cotal down --preserve-state: up exits 0 and the supervisor does not start the broker again", async () => {
    const r = await preparedRoot();
    const sup = supervisorFor(r);
    try {
      const run = sup.start();
      await ready(run);
      const down = await r.cotal(["down", "--preserve-state"]);
      expect(down.code, down.stderr).toBe(0);
      const end = await run.ended;
      expect(end.code, run.output()).toBe(0);
      expect(restartsOnFailure(end)).toBe(false);
      await new Promise((res) => setTimeout(res, seconds(unitValue(unit, "Service", "RestartSec") ?? "0") * 1000 + 500));
      expect(sup.runs).toHaveLength(1);
      const s = await statusOf(r);
      expect(s.broker.running).toBe(false); // the offline cut stands for its backup
      expect(s.journal?.op).toBe("cut");
    } finally {
      sup.dispose();
    }
  });

  it("kill -9 of nats-server: up exits non-zero, the unit fails and the supervisor restarts a serving broker", async () => {
    const r = await preparedRoot();
    const sup = supervisorFor(r);
    try {
      const first = sup.start();
      await ready(first);
      const killed = readRuntime(r.layout)?.owner.pid as number;
      process.kill(killed, "SIGKILL");
      const end = await first.ended;
      expect(end.code, first.output()).toBe(6);
      expect(first.output()).toMatch(/exited on its own \(signal SIGKILL\)/);
      expect(unitFailed(end)).toBe(true);
      const second = await until("the restart", () => sup.runs[1], 10_000, 50);
      await ready(second);
      const s = await statusOf(r);
      expect(s.broker.running).toBe(true);
      expect(s.broker.pid).not.toBe(killed);
      expect((await sup.stop(second)).code).toBe(0);
    } finally {
      sup.dispose();
    }
  });
});
