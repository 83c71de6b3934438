import { lstatSync, realpathSync } from "node:fs";
import { resolve } from "node:path";
import { CotalError } from "../errors.js";
import { shellWord } from "../error-shape.js";

/**
 * The one spelling of a root: its real path once it exists. A root reached through a symlink would
 * otherwise render a different store_dir and lease key than through its real path (docs/refusals.md).
 */
export function canonicalRoot(path: string): string {
  const abs = resolve(path);
  try {
    return realpathSync(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    let dangling = false;
    try {
      dangling = lstatSync(abs).isSymbolicLink();
    } catch {
      // nothing at all there: a root that does not exist yet
    }
    if (dangling) {
      throw new CotalError("root-missing", `the root ${abs} is a symlink to nothing`, { next: `ls -la ${shellWord(abs)}   # a symlink to nothing: point it at the real root, or pass that root as --root` });
    }
    if (code === "ENOENT") return abs;
    throw new CotalError("io", `the root ${abs} cannot be resolved: ${(err as Error).message}`, { next: `ls -ld ${shellWord(abs)}   # check the permissions on the way to the root` });
  }
}
