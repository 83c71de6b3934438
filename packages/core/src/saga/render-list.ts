import { GUARDS_ON, type Guards } from "../guards.js";
import { CotalError } from "../errors.js";
import { renderRoot } from "../broker/render-root.js";
import { loadSpaceAccount } from "../root/account-store.js";
import type { RootLayout } from "../root/layout.js";
import type { AccountRecord } from "../root/records.js";

/** Records already read and validated under the lock (the saga's view, saga/mutation.ts), and the names to read again regardless. */
export interface KnownRecords {
  records: ReadonlyMap<string, AccountRecord>;
  reread: ReadonlySet<string>;
}

/**
 * Renders the config for exactly `spaces` from their records on disk (or, for a name `known` holds
 * and does not ask to re-read, the record it holds). A listed space without a record refuses:
 * rendering without it would silently evict it.
 */
export function renderList(layout: RootLayout, spaces: readonly string[], guards: Guards = GUARDS_ON, known?: KnownRecords): { text: string; digest: string } {
  const records: AccountRecord[] = [];
  for (const name of spaces) {
    const rec = (known && !known.reread.has(name) ? known.records.get(name) : undefined) ?? loadSpaceAccount(layout, name);
    if (!rec) {
      throw new CotalError("render-refused", `space ${name} is in the claimed list but its record is missing on disk (${layout.accountFile(name)}); a render would evict it`, {
        next: "cotal broker reconcile   # prints the disk and KV lists side by side and the ways out",
        details: { space: name },
      });
    }
    records.push(rec);
  }
  const r = renderRoot(layout, records, guards);
  return { text: r.text, digest: r.digest };
}
