import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { rerunWith, CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";
import { RootLayout } from "./layout.js";

/** A root is a directory holding its operator's trust (auth/, written whole by create-root.ts). */
export function isRoot(dir: string): boolean {
  return existsSync(new RootLayout(dir).authDir);
}

/**
 * Every verb but `up` works on an existing root: a missing one (a typo in --root, another directory)
 * is refused before anything is written, and its way out never creates a root (docs/refusals.md,
 * "Printed commands"): the re-run on a root beside it, else a look at where it was expected.
 */
export function requireRoot(root: string): void {
  if (isRoot(root)) return;
  const near = rootsSpelledLike(root);
  // Another root is offered only as the one plausible typo: a re-run elsewhere acts on other tenants.
  const next = near.length === 1
    ? `${rerunWith({ "--root": near[0] as string })}   # the root spelled like it`
    : `ls -la ${shellWord(nearestDir(root))}   # no cotal root at ${root}${near.length > 1 ? ` (roots spelled like it: ${near.join(", ")})` : ""}; \`cotal up --root DIR\` creates one`;
  throw new CotalError("root-missing", `no cotal root at ${root} (no ${new RootLayout(root).authDir}); nothing was changed`, { next, details: { root, near } });
}

/** Roots beside a missing one whose name is at most two edits away (sibling directories, or their ./.cotal). */
function rootsSpelledLike(root: string): string[] {
  const parent = dirname(root);
  const name = basename(root);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return [];
  }
  return names
    .filter((n) => n !== name && editDistance(n, name) <= 2)
    .flatMap((n) => [join(parent, n), join(parent, n, ".cotal")])
    .filter((p) => isRoot(p));
}

/** Levenshtein distance, two rows (names are short). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length] as number;
}

function nearestDir(path: string): string {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}
