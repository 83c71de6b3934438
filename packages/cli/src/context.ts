import { GUARDS_ON, resolveRoot, type Guards, type SagaLimits } from "@cotal/core/light";
import type { Command } from "commander";

/** Options every command inherits from the program: where the root is. */
export function rootOf(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ root?: string }>();
  return resolveRoot(opts.root, process.env);
}

const HANDED = new WeakMap<Command, { guards: Guards; saga: SagaLimits }>();

/** The guards and saga limits the entry handed to the program (bin.ts builds them; docs/ablation.md). */
export function handGuardsTo(program: Command, guards: Guards, saga: SagaLimits = {}): void {
  HANDED.set(program, { guards, saga });
}

function handedTo(cmd: Command): { guards: Guards; saga: SagaLimits } | undefined {
  for (let c: Command | null = cmd; c; c = c.parent) {
    const h = HANDED.get(c);
    if (h) return h;
  }
  return undefined;
}

/** What every command passes to the verbs it calls: the guards handed to its program (every guard on by default). */
export function guardsOf(cmd: Command): Guards {
  return handedTo(cmd)?.guards ?? GUARDS_ON;
}

/** What the saga verbs' commands pass beside the guards: the saga limits handed to the program (none by default). */
export function sagaOf(cmd: Command): SagaLimits {
  return handedTo(cmd)?.saga ?? {};
}
