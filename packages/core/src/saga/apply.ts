import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { CotalError } from "../errors.js";
import { renameDurable, writeDurable, writeFileAtomic } from "../root/secret-files.js";
import type { ReloadVerdict } from "./reload.js";

// The one writer of a server's config (docs/saga.md, "The one apply path"): stage the bytes beside the
// file the server reads, fence on the writer lease, rename, reload, prove from the server, record the
// proof. Every writer of a running server's config goes through `applyConfig`: the mutation and its
// renames back (saga/mutation.ts, saga/resume-executor.ts), each node of a cluster reload
// (saga/cluster-reloader.ts `applyToNode`), the cluster boot (ops/boot-cluster.ts) and `cotal node run`
// (ops/node-agent.ts). What differs between them is handed in: the bytes and paths, the fence, the
// reload, and how the proof is recorded. A config no server runs yet is written by `writeUnservedConfig`.

/** Step 6's fence: the writer lease, re-checked as the instruction before the rename. */
export interface WriterFence {
  /** Is the writer lease still ours? Nothing is renamed unless it says so. */
  held: () => Promise<boolean>;
  /** The refusal a lost lease raises, after the staged file is unlinked and `onLost` ran. */
  lost: () => CotalError;
  /** What the writer undoes once it knows it lost the lease (the saga clears its claim). */
  onLost?: () => Promise<void>;
  /** A test-only ablation switch the caller read (DISABLE_FENCE, CLUSTER_NO_NODE_FENCE): rename without the check. */
  unchecked?: boolean;
}

/** The points between the steps where a writer does its own work (CAS the staged digest, failpoints, timings). */
export interface ApplySteps {
  /** Wraps the stage step (render included) and the promote step (fence + rename). */
  timed?: <T>(step: "stage" | "promote", fn: () => Promise<T>) => Promise<T>;
  /** Inside the stage step, once the bytes are durable at the staged path (the saga CASes their digest). */
  staged?: () => Promise<void>;
  /** After the stage step, before the bytes the rename replaces are read. */
  afterStage?: () => Promise<void>;
  /** Just before the fence (a writer paused here must re-check on waking). */
  beforeFence?: () => Promise<void>;
  /** After the rename, before the reload. */
  renamed?: () => Promise<void>;
}

export interface ConfigApply<P> {
  /** The file the server reads: the root's server.conf or a node's nodes/<name>/server.conf. */
  target: string;
  /** Where the bytes are staged, beside the target; absent: a temp name of this process (reaped like every temp). */
  staged?: string;
  /** The bytes to apply, produced inside the stage step (a render is timed with it). */
  config: () => string | Uint8Array;
  fence: WriterFence;
  /** The server's reload and its own word on it. Absent: no server runs the target yet (offline), so the apply stops at the rename. */
  reload?: () => Promise<ReloadVerdict>;
  /** Records what the reload proved (or answers a verdict that proved nothing); runs only after the reload. */
  record: (verdict: ReloadVerdict) => Promise<P>;
  /** Keep the bytes the rename replaced (the saga's rollback target). */
  keepPrevious?: boolean;
  steps?: ApplySteps;
}

export type Applied<P> =
  /** Renamed; nothing reloaded it (offline). */
  | { kind: "promoted"; previous?: Buffer }
  /** Renamed, reloaded, and the verdict handed to `record`, whose answer is `proof`. */
  | { kind: "reloaded"; previous?: Buffer; verdict: ReloadVerdict; proof: P };

/** A temp path beside `target`, of the shape writeFileAtomic uses (`.<name>.<pid>.<hex>.tmp`). */
function tempBeside(target: string): string {
  return join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

/** Step 5's write: the bytes, fsynced, at the staged path (a temp one is created exclusively and refused as `io`). */
function stage(staged: string, bytes: string | Uint8Array, named: boolean): void {
  if (named) return writeDurable(staged, bytes);
  try {
    writeDurable(staged, bytes, undefined, "wx");
  } catch (err) {
    rmSync(staged, { force: true });
    throw new CotalError("io", `could not write ${staged}: ${(err as Error).message}`, { cause: err });
  }
}

/** Step 6: a writer that lost its lease unlinks what it staged and never renames; the fence is the instruction before rename(2). */
async function promote(staged: string, target: string, fence: WriterFence): Promise<void> {
  if (!fence.unchecked && !(await fence.held())) {
    rmSync(staged, { force: true });
    await fence.onLost?.();
    throw fence.lost();
  }
  renameDurable(staged, target);
}

/** The one apply path: stage, fence, rename, reload, prove, record the proof (in that order, every writer). */
export function applyConfig<P>(a: ConfigApply<P> & Required<Pick<ConfigApply<P>, "reload">>): Promise<Extract<Applied<P>, { kind: "reloaded" }>>;
export function applyConfig<P>(a: ConfigApply<P>): Promise<Applied<P>>;
export async function applyConfig<P>(a: ConfigApply<P>): Promise<Applied<P>> {
  const timed = a.steps?.timed ?? (<T>(_step: string, fn: () => Promise<T>) => fn());
  const staged = a.staged ?? tempBeside(a.target);
  await timed("stage", async () => {
    const bytes = a.config();
    stage(staged, bytes, a.staged !== undefined);
    await a.steps?.staged?.();
  });
  await a.steps?.afterStage?.();
  const previous = a.keepPrevious ? readFileSync(a.target) : undefined;
  await a.steps?.beforeFence?.();
  await timed("promote", () => promote(staged, a.target, a.fence));
  await a.steps?.renamed?.();
  const kept = previous ? { previous } : {};
  if (!a.reload) return { kind: "promoted", ...kept };
  const verdict = await a.reload();
  return { kind: "reloaded", ...kept, verdict, proof: await a.record(verdict) };
}

/**
 * A config no running server reads yet (a cold boot's render, a stopped node's config written before it
 * starts, the first config of a new cluster root): atomic and durable, with no lease or reload, since
 * no server can have loaded it. Every other write of a server.conf goes through applyConfig.
 */
export function writeUnservedConfig(target: string, text: string): void {
  writeFileAtomic(target, text);
}
