import { GUARDS_ON, resolveRoot, type Guards } from "@cotal/saga";
import type { Command } from "commander";

/** Options every command inherits from the program: where the root is. */
export function rootOf(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ root?: string }>();
  return resolveRoot(opts.root);
}

const GUARDS = new WeakMap<Command, Guards>();

/** The guards the entry handed to the program (bin.ts builds them; docs/ablation.md). */
export function handGuardsTo(program: Command, guards: Guards): void {
  GUARDS.set(program, guards);
}

/** What every command passes to the verbs it calls: the guards handed to its program (every guard on by default). */
export function guardsOf(cmd: Command): Guards {
  let c: Command | null = cmd;
  while (c) {
    const g = GUARDS.get(c);
    if (g) return g;
    c = c.parent;
  }
  return GUARDS_ON;
}
