import { resolveRoot } from "@cotal/saga";
import type { Command } from "commander";

/** Options every command inherits from the program: where the root is. */
export function rootOf(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ root?: string }>();
  return resolveRoot(opts.root);
}
