import { createHash } from "node:crypto";
import { join } from "node:path";
import type { RootLayout } from "./layout.js";
import { ensureSecretDir, readTextIfExists, writeFileAtomic } from "./secret-files.js";

/**
 * The digests of account-record bytes that passed the full check (records.ts) on this root, so a
 * fresh process (every CLI verb) re-validates only what changed: the check is a pure function of
 * those bytes, and any other byte, a hand edit or a bit flip included, misses and is checked in full.
 * A cache, not a record: unreadable or absent means empty; it never holds a seed, only sha256 digests.
 */
const FORMAT = "cotal.validated-records/1";

export function recordIndexFile(layout: RootLayout): string {
  return join(layout.runDir, "validated-records.json");
}

/** The digest a record's bytes are remembered by, bound to the kind and name they were checked for. */
export function recordDigest(kind: string, name: string, text: string): string {
  return createHash("sha256").update(kind).update("\0").update(name).update("\0").update(text).digest("base64url");
}

const loaded = new Map<string, Set<string>>();

/** The digests this root's index holds (read once per process). */
export function validatedDigests(layout: RootLayout): Set<string> {
  const path = recordIndexFile(layout);
  let set = loaded.get(path);
  if (set) return set;
  set = new Set();
  try {
    const raw = JSON.parse(readTextIfExists(path) ?? "null") as { format?: unknown; digests?: unknown } | null;
    if (raw && raw.format === FORMAT && Array.isArray(raw.digests)) for (const d of raw.digests) if (typeof d === "string") set.add(d);
  } catch {
    // a torn or foreign file is an empty cache: every record is checked in full
  }
  loaded.set(path, set);
  return set;
}

/**
 * Rewrites the index to exactly `digests` (the records of one whole scan, so removed tenants drop
 * out) when it differs. Best effort: a root this process may not write (a read-only `status`) keeps
 * the old index and loses only speed.
 */
export function saveValidatedDigests(layout: RootLayout, digests: ReadonlySet<string>): void {
  const cur = validatedDigests(layout);
  if (cur.size === digests.size && [...digests].every((d) => cur.has(d))) return;
  try {
    ensureSecretDir(layout.runDir);
    writeFileAtomic(recordIndexFile(layout), `${JSON.stringify({ format: FORMAT, digests: [...digests].sort() })}\n`);
    loaded.set(recordIndexFile(layout), new Set(digests));
  } catch {
    // not writable: the next process validates in full, as it would without an index
  }
}

/** Test-only: forget what this process loaded, as a fresh CLI process would. */
export function forgetLoadedIndexes(): void {
  loaded.clear();
}
