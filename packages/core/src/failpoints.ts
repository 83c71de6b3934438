import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CotalError } from "./errors.js";

/**
 * Crash-test hooks, each named after the step it follows or precedes (the saga's: SAGA_STEPS in
 * saga/steps.ts, docs/saga.md "The steps"). Inert unless COTAL_FAILPOINT is set, e.g.
 * `COTAL_FAILPOINT=after-claim:exit` or `up-locked:sleep:3000,before-rename:barrier:/tmp/b:2`.
 * Actions: exit (code 86, no cleanup), kill (SIGKILL self), throw, sleep:<ms>, barrier:<dir>:<n>.
 * A step reached more than once (once per cluster node) takes `<step>#<n>`: the action fires on the
 * n-th time only, e.g. `after-node-proof#2:kill`.
 */
export type FailpointAction = (
  | { kind: "exit" }
  | { kind: "kill" }
  | { kind: "throw" }
  | { kind: "sleep"; ms: number }
  | { kind: "barrier"; dir: string; parties: number }
) & { nth?: number };

/** Every step a failpoint can be armed at; an unknown name in COTAL_FAILPOINT is refused, never silently inert. */
export const FAILPOINTS = [
  // the mutation saga: SAGA_STEPS (saga/steps.ts; docs/saga.md "The steps"), then a new root's first record (saga/seed.ts)
  "after-read", "after-lease", "before-claim", "after-claim", "after-materialise", "after-stage", "before-rename", "after-rename", "after-proof", "after-commit", "before-seed",
  // up and the broker process
  "up-locked", "up-rendered", "up-started", "broker-spawned",
  "maintenance-started", "backup-started", "clean-started", "restore-quarantine-started", "restore-target-started",
  // a cluster reload (saga/cluster-reloader.ts): after each node's rename (before its reload), after its proof and partial-proof CAS, once per node
  "node-renamed", "after-node-proof",
  // space rm, space add after its commit (docs/saga.md "Provisioning after the commit") and up --rotate-sys (docs/refusals.md)
  "rm-journaled", "rm-streams-deleted", "add-provisioning", "rotate-journaled", "rotate-seed-written", "rotate-applied", "rotate-carried",
  // space rotate-key (ops/space-rotate-key.ts): the new key staged, proven in the JWT, the record signing with it, cotal's creds re-signed
  "rotate-key-staged", "rotate-key-added", "rotate-key-signer", "rotate-key-reminted",
  // cotal node run (ops/node-agent.ts): it read the record and decided to apply, before the writer lease
  "node-decided",
  // the preserve-state cut, backup and restore
  "cut-intent", "cut-committed", "resume-intent",
  "backup-snapshot-start", "backup-first-chunk", "backup-mid-stream", "backup-snapshot-close", "backup-manifest",
  // the online backup (backup/online-backup.ts): the quiesce journaled, proven; the artifact published; the lift proven
  "backup-quiesce-journaled", "backup-quiesced", "backup-published", "backup-lifted", "backup-live-published",
  // the online restore (backup/online-restore.ts): journaled, quiesced, --replace's deletion begun and done, a stream installed, verified, lifted
  "restore-online-journaled", "restore-online-quiesced", "restore-safety-taken", "restore-safety-stream", "restore-online-deletion-began", "restore-online-deleted", "restore-online-stream", "restore-online-installed", "restore-online-verified", "restore-online-lifted", "restore-online-done",
  "restore-quarantine-begin", "restore-quarantine-stream", "restore-quarantine-verified", "restore-quarantine-done",
  "restore-target-begin", "restore-target-stream", "restore-target-verified", "restore-target-done",
] as const;

export type FailpointName = (typeof FAILPOINTS)[number];

export const FAILPOINT_EXIT_CODE = 86;

/** What a `throw` failpoint raises: callers that type I/O errors must let it through as it is. */
export class FailpointError extends Error {
  override readonly name = "FailpointError";
}

export function parseFailpoints(spec: string | undefined): Map<string, FailpointAction> {
  const out = new Map<string, FailpointAction>();
  if (!spec) return out;
  for (const entry of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [step, kind, ...args] = entry.split(":");
    const [name, nthText, ...more] = (step ?? "").split("#");
    if (!name || !kind || more.length > 0 || (nthText !== undefined && !/^[1-9]\d*$/.test(nthText))) throw new CotalError("invalid-argument", `bad COTAL_FAILPOINT entry ${JSON.stringify(entry)}`);
    if (!(FAILPOINTS as readonly string[]).includes(name)) {
      throw new CotalError("invalid-argument", `COTAL_FAILPOINT names an unknown step ${JSON.stringify(name)}; known: ${FAILPOINTS.join(", ")}`, { next: "unset COTAL_FAILPOINT, or name a known step" });
    }
    const nth = nthText !== undefined ? { nth: Number(nthText) } : {};
    if (kind === "exit" || kind === "kill" || kind === "throw") out.set(name, { kind, ...nth });
    else if (kind === "sleep" && args[0] && /^\d+$/.test(args[0])) out.set(name, { kind, ms: Number(args[0]), ...nth });
    else if (kind === "barrier" && args.length >= 2) {
      const parties = Number(args[args.length - 1]);
      out.set(name, { kind, dir: args.slice(0, -1).join(":"), parties, ...nth });
    } else throw new CotalError("invalid-argument", `bad COTAL_FAILPOINT action in ${JSON.stringify(entry)}`);
  }
  return out;
}

let armed: Map<string, FailpointAction> | undefined;
/** How often each step was reached, for the `#<n>` form. */
const hits = new Map<string, number>();

function points(): Map<string, FailpointAction> {
  armed ??= parseFailpoints(process.env.COTAL_FAILPOINT);
  return armed;
}

/** The action armed at `name` if it fires on this visit (every visit, or only the n-th). */
function firing(name: FailpointName): FailpointAction | undefined {
  const action = points().get(name);
  if (!action || action.nth === undefined) return action;
  const n = (hits.get(name) ?? 0) + 1;
  hits.set(name, n);
  return n === action.nth ? action : undefined;
}

/** Re-reads COTAL_FAILPOINT (tests that change the env in-process). */
export function resetFailpoints(): void {
  armed = undefined;
  hits.clear();
}

async function barrier(dir: string, parties: number, name: FailpointName): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.${process.pid}`), "");
  const deadline = Date.now() + 30_000;
  while (readdirSync(dir).length < parties) {
    if (Date.now() > deadline) throw new CotalError("invalid-argument", `failpoint barrier ${dir} never reached ${parties} parties`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export async function failpoint(name: FailpointName): Promise<void> {
  if (process.env.COTAL_FAILPOINT === undefined) return;
  const action = firing(name);
  if (!action) return;
  switch (action.kind) {
    case "exit":
      process.stderr.write(`cotal: failpoint ${name}: exit\n`);
      process.exit(FAILPOINT_EXIT_CODE);
    // falls through (process.exit never returns)
    case "kill":
      process.kill(process.pid, "SIGKILL");
      await new Promise(() => undefined);
      return;
    case "throw":
      throw new FailpointError(`failpoint ${name}`);
    case "sleep":
      await new Promise((r) => setTimeout(r, action.ms));
      return;
    case "barrier":
      await barrier(action.dir, action.parties, name);
      return;
  }
}

/** The synchronous subset (exit, kill, throw) for the few steps that cannot await. */
export function failpointSync(name: FailpointName): void {
  if (process.env.COTAL_FAILPOINT === undefined) return;
  const action = firing(name);
  if (!action) return;
  if (action.kind === "exit") {
    process.stderr.write(`cotal: failpoint ${name}: exit\n`);
    process.exit(FAILPOINT_EXIT_CODE);
  }
  if (action.kind === "kill") process.kill(process.pid, "SIGKILL");
  if (action.kind === "throw") throw new FailpointError(`failpoint ${name}`);
}
