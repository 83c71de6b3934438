import { GUARDS_ON, type Guards } from "../guards.js";
import { canonicalRoot } from "../root/canonical-root.js";
import { RootLayout } from "../root/layout.js";
import { openLiveSession } from "./session.js";

/** How many of a set of names a running root's committed list holds, read again on each call. */
export interface CommitFollower {
  /** Of the followed names, those the KV record lists (claimed names are not committed yet); undefined when the read failed. */
  committed(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * A read-only follower of a running root's inventory for `names` (the queued add's bar follows the
 * commits, not the jobs: a batch's jobs finish only once it is provisioned; docs/commands/space.md).
 * No lock, no lease, no write: one store connection, one KV read per call.
 */
export async function followCommits(opts: { root: string; names: readonly string[]; guards?: Guards }): Promise<CommitFollower> {
  const layout = new RootLayout(canonicalRoot(opts.root));
  const session = await openLiveSession(layout, "space add --queue", { guards: opts.guards ?? GUARDS_ON });
  return {
    async committed() {
      try {
        const vr = await session.store.read();
        if (!vr) return undefined;
        const listed = new Set(vr.record.spaces);
        return opts.names.filter((n) => listed.has(n)).length;
      } catch {
        return undefined; // a bar is no reason to fail the wait: the jobs' own count stands
      }
    },
    close: () => session.close(),
  };
}
