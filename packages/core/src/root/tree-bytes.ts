import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Bytes of the regular files under `dir`, symlinks not followed; 0 for a directory that cannot be
 * read. Entries removed while it walks are skipped: a store's size read beside a running server.
 */
export function treeBytes(dir: string): number {
  let total = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const n of names) {
    try {
      const st = lstatSync(join(dir, n));
      total += st.isDirectory() ? treeBytes(join(dir, n)) : st.isFile() ? st.size : 0;
    } catch {
      // removed meanwhile
    }
  }
  return total;
}
