import type { Command } from "commander";
import { rootOf } from "./context.js";

/** Commands that need no existing root: `up` creates one; `backup verify` reads an artifact only. */
const NO_ROOT_NEEDED = new Set(["up", "backup verify"]);

function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/**
 * Every other verb refuses root-missing (exit 5) before it runs, so a typo in --root never becomes a
 * new directory or a broker, and its next never creates one (docs/refusals.md, "Printed commands").
 */
export function requireRootBeforeVerbs(program: Command): void {
  program.hook("preAction", async (_program, action) => {
    if (NO_ROOT_NEEDED.has(pathOf(action))) return;
    const { nodeDirOf, requireRoot } = await import("@cotal/core/root"); // loaded by a verb, not by --help (issue 35)
    // A node's own directory (`cotal node bundle`) holds no operator trust: only its agent runs there.
    if (pathOf(action) === "node run" && nodeDirOf(rootOf(action)) !== undefined) return;
    requireRoot(rootOf(action));
  });
}
