import { realpathSync } from "node:fs";
import { join } from "node:path";
import { CredentialPoller, freePort, monotonicMs, tempRoot, type CotalResult, type PollReport } from "@cotal/harness";
import { Driver, SetupError, type KillPlan, type KillRecord, type StepLog } from "./driver.js";
import { detachUp, lastNext } from "./next-line.js";
import { serversOf } from "./procs.js";
import { Rng } from "./rng.js";
import { connectError, streamCounts, templateStreams } from "./tenant.js";
import { credsOf, observerProblem, type RunCtx, type Scenario, type Status } from "./verbs.js";

export const RECOVERY_CAP = Number(process.env.CHAOS_RECOVERY_CAP ?? 12);

export interface RemovedCredReport {
  space: string;
  /** What the window is counted from: the definite commit, or the server's first rejection if earlier. */
  windowFrom: string;
  /** ms since the verb's spawn; undefined when the removal never committed (a failure). */
  windowStartMs: number | undefined;
  attempts: number;
  /** Successes that started after the window opened: must be 0. */
  successesAfterWindow: number;
  /** Successes between the verb's start and the window (legitimate: the space was still trusted). */
  successesBeforeWindow: number;
  lastSuccessMs: number | undefined;
}

export interface RunResult {
  verb: string;
  run: number;
  seed: number;
  calibration: boolean;
  kill: KillRecord | undefined;
  verbExit: number | null;
  verbMs: number;
  converged: boolean;
  recoverySteps: number;
  intentRerun: boolean;
  failures: string[];
  facts: Record<string, string | number | boolean>;
  removedCred?: RemovedCredReport;
  neverAdmitted?: { space: string; attempts: number; successes: number; rejections: number };
  durationMs: number;
  steps: StepLog[];
}

const AUTH_REJECTED = /authorization violation/i;

async function statusJson(d: Driver): Promise<Status | undefined> {
  const r = await d.cotal("check", ["status", "--json"]);
  try {
    return JSON.parse(r.stdout) as Status;
  } catch {
    return undefined;
  }
}

/** Everything that keeps a root from "converged"; empty when it has. */
export function convergenceProblems(st: Status | undefined, servers: { pid: number; kind: string }[]): string[] {
  if (!st) return ["cotal status --json printed no JSON"];
  const p: string[] = [];
  if (st.state !== "clean") p.push(`state ${st.state} (${st.why ?? ""})`);
  if (!st.broker.running) p.push("broker not running");
  const inv = st.inventory;
  if (!inv) p.push(`no inventory${st.inventoryError ? `: ${st.inventoryError}` : ""}`);
  else {
    if (inv.generation !== inv.appliedGeneration) p.push(`generation ${inv.generation} != appliedGeneration ${inv.appliedGeneration}`);
    if (inv.pending !== null && inv.pending !== undefined) p.push(`pending ${JSON.stringify(inv.pending)}`);
    const disk = st.spaces.map((s) => s.name).sort();
    const kv = [...inv.spaces, ...(inv.excluded ?? [])].sort();
    if (disk.join(",") !== kv.join(",")) p.push(`disk [${disk.join(", ")}] != KV [${kv.join(", ")}]`);
    const notServed = st.spaces.filter((s) => inv.spaces.includes(s.name) && !s.inConfig).map((s) => s.name);
    if (notServed.length) p.push(`listed but not in server.conf: ${notServed.join(", ")}`);
  }
  if (st.journal) p.push(`journal ${JSON.stringify(st.journal)}`);
  if (st.provisioningOwed?.length) p.push(`provisioning owed: ${st.provisioningOwed.join(", ")}`);
  // a lock whose holder is dead is reclaimed by the next verb (docs/refusals.md step 3); a live one blocks
  if (st.lock && (st.lock as { status?: string }).status !== "dead") p.push(`lock ${JSON.stringify(st.lock)}`);
  for (const [k, v] of [["diskOnly", st.diskOnly], ["kvOnly", st.kvOnly], ["configOnly", st.configOnly], ["corrupt", st.corrupt]] as const)
    if (v.length) p.push(`${k} ${JSON.stringify(v)}`);
  const strays = servers.filter((s) => s.pid !== st.broker.pid);
  if (strays.length) p.push(`stray nats-server: ${strays.map((s) => `${s.pid} (${s.kind})`).join(", ")}`);
  if (st.broker.running && !servers.some((s) => s.pid === st.broker.pid)) p.push(`status names broker pid ${st.broker.pid}, no such nats-server of this root runs`);
  return p;
}

interface Recovery {
  converged: boolean;
  steps: number;
  status: Status | undefined;
  problem?: string;
}

/**
 * Does only what the output says: the last runnable `next:` (stderr, else stdout); with none, the
 * documented start when the broker is down, else what `cotal status` prints next. Stops when
 * converged, fails after the cap.
 */
async function recover(d: Driver, sc: Scenario, ctx: RunCtx, from: CotalResult, onStep: () => Promise<void>): Promise<Recovery> {
  let last = from;
  let steps = 0;
  for (;;) {
    let chain = lastNext(last.stderr)?.chain ?? lastNext(last.stdout)?.chain;
    let st: Status | undefined;
    if (!chain) {
      st = await statusJson(d);
      if (convergenceProblems(st, serversOf(ctx.root)).length === 0) return { converged: true, steps, status: st };
      if (st && !st.broker.running) chain = [["up", "--detach"]];
      else {
        const human = await d.cotal("check", ["status"]);
        chain = lastNext(human.stdout)?.chain;
        if (!chain) {
          const printed = lastNext(human.stdout)?.printed;
          return { converged: false, steps, status: st, problem: `stuck: not converged (${convergenceProblems(st, serversOf(ctx.root)).join("; ")}) and nothing runnable printed${printed ? ` (status says: next: ${printed})` : ""}` };
        }
      }
    }
    if (steps >= RECOVERY_CAP) {
      st ??= await statusJson(d);
      return { converged: false, steps, status: st, problem: `no convergence after ${RECOVERY_CAP} recovery steps (${convergenceProblems(st, serversOf(ctx.root)).join("; ")})` };
    }
    // `a && b`, as a shell runs it: each command in turn while the previous one succeeded.
    for (const argv of chain) {
      last = await d.cotal("recover", detachUp(sc.prefer ? sc.prefer(ctx, argv) : argv));
      if (last.code !== 0) break;
    }
    steps += 1;
    await onStep();
  }
}

export async function runOnce(sc: Scenario, run: number, seed: number, calibratedMs: number | undefined): Promise<RunResult> {
  const rng = new Rng(seed);
  const tmp = await tempRoot(`cotal-chaos-${sc.verb}-`);
  const scratch = realpathSync(tmp.path);
  const root = join(scratch, ".cotal");
  const port = await freePort();
  const ctx: RunCtx = { root, scratch, port, url: `nats://127.0.0.1:${port}`, rng, facts: {}, creds: {} };
  const d = new Driver(root, (xs) => rng.pick(xs));
  const failures: string[] = [];
  const t0 = monotonicMs();
  const result: RunResult = {
    verb: sc.verb, run, seed, calibration: calibratedMs === undefined, kill: undefined, verbExit: null, verbMs: 0,
    converged: false, recoverySteps: 0, intentRerun: false, failures, facts: ctx.facts, durationMs: 0, steps: d.steps,
  };
  // drawn before setup so a seed names the same kill whatever setup consumed
  const plan: KillPlan | undefined = calibratedMs === undefined ? undefined : { target: rng.next() < 0.5 ? "cotal" : "nats", atMs: Math.round(rng.next() * calibratedMs) };
  const pollers: CredentialPoller[] = [];
  try {
    await sc.setup(d, ctx);
    let removedPoller: CredentialPoller | undefined;
    if (sc.removed) {
      const creds = ctx.creds[sc.removed];
      if (!creds) throw new SetupError(`no creds minted for ${sc.removed}`);
      removedPoller = new CredentialPoller({ url: ctx.url, creds, concurrency: 2, intervalMs: 2, maxDurationMs: 600_000, name: "chaos-removed" }).start();
      pollers.push(removedPoller);
      // positive control: the cred connects before the removal starts
      await removedPoller.waitForAttempt((a) => a.ok, { timeoutMs: 10_000 });
    }
    const neverName = sc.neverAdmitted?.(ctx);
    let neverPoller: CredentialPoller | undefined;
    if (neverName) {
      const creds = ctx.creds[neverName];
      if (!creds) throw new SetupError(`no creds minted for ${neverName}`);
      neverPoller = new CredentialPoller({ url: ctx.url, creds, concurrency: 2, intervalMs: 2, maxDurationMs: 600_000, name: "chaos-never" }).start();
      pollers.push(neverPoller);
    }

    const verbStart = monotonicMs();
    const { res, kill } = await d.verb(sc.argv(ctx), plan);
    const verbEnd = monotonicMs();
    result.kill = kill;
    result.verbExit = res.code;
    result.verbMs = Math.round(res.durationMs);
    if (!plan && res.code !== 0) failures.push(`calibration: the unkilled verb exited ${res.code}: ${res.stderr.trim().split("\n").slice(-3).join(" | ")}`);

    // the removal's definite commit: its own exit 0, or the first status (after the verb, then after
    // each recovery step) whose committed KV list no longer names it
    let committedAt: number | undefined;
    let committedHow = "";
    const noteCommit = async (how: string, at: number): Promise<void> => {
      if (!sc.removed || committedAt !== undefined) return;
      const st = await statusJson(d);
      const inv = st?.inventory;
      const done = sc.cutCommitted ? !!st && sc.cutCommitted(ctx, st) : !!inv && !inv.spaces.includes(sc.removed) && inv.generation === inv.appliedGeneration && !inv.pending;
      if (done) {
        committedAt = at;
        committedHow = how;
      }
    };
    if (sc.removed && res.code === 0) {
      committedAt = verbEnd;
      committedHow = "the removal exited 0";
    } else await noteCommit("status after the killed removal shows it committed (so it committed before the verb ended)", verbEnd);

    const onStep = async (): Promise<void> => noteCommit(`status after recovery step ${d.steps.filter((s) => s.phase === "recover").length} shows it committed`, monotonicMs());
    let rec = await recover(d, sc, ctx, res, onStep);
    result.recoverySteps = rec.steps;
    if (!rec.converged) failures.push(`recovery: ${rec.problem}`);
    else {
      if (sc.invariant && rec.status) {
        const bad = await sc.invariant(d, ctx, rec.status);
        if (bad) failures.push(`after recovery: ${bad}`);
      }
      const unmet = rec.status ? await sc.endState(d, ctx, rec.status) : "no status";
      if (unmet && !plan) failures.push(`calibration: the unkilled verb's end state does not hold: ${unmet}`);
      if (unmet && plan) {
        // the verb did not land (cut before its commit point): the operator re-runs it
        result.intentRerun = true;
        ctx.facts.unmetAfterRecovery = unmet;
        let last: CotalResult | undefined;
        for (const argv of sc.intent(ctx, rec.status as Status)) {
          last = await d.cotal("intent", argv);
          await onStep();
          if (last.code !== 0) {
            failures.push(`re-run of the verb: cotal ${argv.join(" ")} exited ${last.code}: ${last.stderr.trim().split("\n").slice(-3).join(" | ")}`);
            break;
          }
        }
        if (last && failures.length === 0) {
          rec = await recover(d, sc, ctx, last, onStep);
          result.recoverySteps += rec.steps;
          if (!rec.converged) failures.push(`after the re-run: ${rec.problem}`);
          else {
            const still = rec.status ? await sc.endState(d, ctx, rec.status) : "no status";
            if (still) failures.push(`the re-run did not reach the end state: ${still}`);
          }
        }
      }
    }
    result.converged = rec.converged;

    if (rec.converged && rec.status) {
      if (sc.invariant && result.intentRerun) {
        const bad = await sc.invariant(d, ctx, rec.status);
        if (bad) failures.push(`after the re-run: ${bad}`);
      }
      const serve = new Set([...(rec.status.inventory?.spaces ?? []), ...sc.mustServe(ctx, rec.status)]);
      for (const space of serve) {
        let creds: string;
        try {
          creds = await credsOf(d, space);
        } catch (e) {
          failures.push(`space creds ${space}: ${(e as Error).message}`);
          continue;
        }
        const err = await connectError(ctx.url, creds);
        if (err) {
          failures.push(`${space}'s fresh cred does not connect: ${err}`);
          continue;
        }
        const streams = await streamCounts(ctx.url, creds).catch((e: Error) => ({ error: e.message }) as Record<string, unknown>);
        const missing = templateStreams(space).filter((s) => !(s in streams));
        if (missing.length) failures.push(`${space} is served but not provisioned: missing ${missing.join(", ")}`);
      }
      const observers = await observerProblem(ctx, rec.status.inventory?.spaces ?? []);
      if (observers) failures.push(observers);
    }

    if (removedPoller && sc.removed) {
      await new Promise((r) => setTimeout(r, 300)); // a last stretch of attempts after convergence
      const rep: PollReport = await removedPoller.stop();
      const rejection = rep.attempts.filter((a) => !a.ok && a.startedAt >= verbStart && AUTH_REJECTED.test(a.error ?? "")).reduce<number | undefined>((m, a) => (m === undefined ? a.endedAt : Math.min(m, a.endedAt)), undefined);
      let windowStart = committedAt;
      let from = committedAt !== undefined ? committedHow : "never committed";
      if (rejection !== undefined && !sc.refusalNotFinal && (windowStart === undefined || rejection < windowStart)) {
        windowStart = rejection;
        from = "the server's first Authorization Violation for the cred";
      }
      const after = windowStart === undefined ? 0 : rep.successesBetween(windowStart, Number.POSITIVE_INFINITY, "within");
      result.removedCred = {
        space: sc.removed,
        windowFrom: from,
        windowStartMs: windowStart === undefined ? undefined : Math.round(windowStart - verbStart),
        attempts: rep.total,
        successesAfterWindow: after,
        successesBeforeWindow: rep.successesBetween(verbStart, windowStart ?? Number.POSITIVE_INFINITY, "within"),
        lastSuccessMs: rep.lastSuccessAt === undefined ? undefined : Math.round(rep.lastSuccessAt - verbStart),
      };
      if (windowStart === undefined) failures.push(`${sc.removed}'s removal never committed`);
      if (after > 0) failures.push(`${sc.removed}'s removed cred connected ${after} time(s) after ${from}`);
    }
    if (neverPoller && neverName) {
      const rep = await neverPoller.stop();
      const rejections = rep.attempts.filter((a) => AUTH_REJECTED.test(a.error ?? "")).length;
      result.neverAdmitted = { space: neverName, attempts: rep.total, successes: rep.successes, rejections };
      if (rep.successes > 0) failures.push(`${neverName} (never admitted) connected ${rep.successes} time(s)`);
      if (rejections === 0) failures.push(`control: ${neverName}'s poller never reached the server (no Authorization Violation recorded)`);
    }
  } catch (e) {
    failures.push(`${e instanceof SetupError ? "setup" : "driver"}: ${(e as Error).message}`);
  } finally {
    for (const p of pollers) if (p.running) await p.stop();
    result.durationMs = Math.round(monotonicMs() - t0);
    for (const s of serversOf(root)) process.kill(s.pid, "SIGKILL");
    if (failures.length === 0) await tmp.cleanup();
    else ctx.facts.keptRoot = root;
  }
  return result;
}
