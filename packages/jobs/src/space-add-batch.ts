import { spaceAdd, type SagaTiming, type SpaceAddOptions, type SpaceAddResult } from "@cotal/core";
import { type Guards } from "@cotal/core/light";
import { isRetriable, toJobFailure } from "./failures.js";
import { isBlocked } from "./blocked-retry.js";
import type { ItemResult } from "./group-commit.js";

export interface SpaceAddItem {
  name: string;
  jobId: string;
}

/** What each space-add job completes with: its own outcome, and the batch it rode in. */
export interface SpaceAddJobResult {
  space: string;
  outcome: "added" | "already-present";
  generation: number;
  batchSize: number;
  reloads: number;
}

export interface SpaceAddBatchOptions {
  root: string;
  lockWaitMs: number;
  onTiming?: (step: SagaTiming, ms: number) => void;
  onNotice?: (message: string) => void;
  onResult?: (r: SpaceAddResult, names: readonly string[]) => void;
  /** The saga's attempt and provisioning-retry counters (metrics.ts). */
  hooks?: Pick<SpaceAddOptions, "onAttempt" | "onProvisionRetry">;
  /** The guards the entry handed in (docs/ablation.md), passed to the verb. */
  guards?: Guards;
  /** The saga verb; a test may substitute a fake. */
  add?: typeof spaceAdd;
}

/**
 * One group commit: a single `spaceAdd` (one generation, one reload) for the batch's distinct names.
 * The saga refuses a whole batch over one bad record, so a permanent refusal of a batch is retried
 * name by name: only the offending job fails. Retriable refusals fail every job; BullMQ retries them.
 * A busy or blocked root (`lock-held`, `journal-blocked`) fails every job with the refusal itself:
 * the worker decides per job whether to wait it out (blocked-retry.ts); re-running name by name
 * would only meet it N times.
 */
export function spaceAddBatchRunner(opts: SpaceAddBatchOptions) {
  const add = opts.add ?? spaceAdd;
  const run = async (names: string[], committed?: () => void): Promise<SpaceAddResult> => {
    const r = await add({
      root: opts.root,
      names,
      lockWaitMs: opts.lockWaitMs,
      // Batches queue on the lock: each reads its decision once it holds it, so none conflicts on
      // the batch before it (docs/resume.md, R1); the next batch starts at this one's commit.
      decideUnderLock: true,
      ...(committed ? { onCommitted: () => committed() } : {}),
      ...(opts.onTiming ? { onTiming: opts.onTiming } : {}),
      ...(opts.onNotice ? { onNotice: opts.onNotice } : {}),
      ...opts.hooks,
      ...(opts.guards ? { guards: opts.guards } : {}),
    });
    opts.onResult?.(r, names);
    return r;
  };
  const resultFor = (r: SpaceAddResult, name: string, batchSize: number, added = new Set(r.added)): SpaceAddJobResult => ({
    space: name,
    outcome: added.has(name) ? "added" : "already-present",
    generation: r.generation,
    batchSize,
    reloads: r.reloads,
  });

  return async (_key: string, items: readonly SpaceAddItem[], committed?: () => void): Promise<ItemResult<SpaceAddJobResult>[]> => {
    // A job re-delivered after a stall may share a batch with its earlier self: one name, one entry.
    const names = [...new Set(items.map((i) => i.name))];
    try {
      const r = await run(names, committed);
      const added = new Set(r.added);
      return items.map((i) => ({ ok: true, value: resultFor(r, i.name, names.length, added) }));
    } catch (err) {
      if (isBlocked(err)) return items.map(() => ({ ok: false, error: err }));
      if (isRetriable(err) || names.length === 1) return items.map(() => ({ ok: false, error: toJobFailure(err) }));
      const single = new Map<string, ItemResult<SpaceAddJobResult>>();
      for (const n of names) {
        try {
          single.set(n, { ok: true, value: resultFor(await run([n]), n, 1) });
        } catch (e) {
          single.set(n, { ok: false, error: isBlocked(e) ? e : toJobFailure(e) });
        }
      }
      return items.map((i) => single.get(i.name) ?? { ok: false, error: toJobFailure(err) });
    }
  };
}
