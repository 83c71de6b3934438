import type { JournalEntry, PendingMutation } from "@cotal/core";
import { html, type Html } from "./html.js";
import type { Severity } from "./severity.js";
import type { LockHolder } from "./tenant-data.js";

/** One line of what holds the root or a tenant: its words, its colour and, where one is owed, the command that clears it. */
export interface Fact {
  text: string;
  severity: Severity;
  next?: string;
}

/**
 * Pure: the journal entry in words; a standing entry is red (every mutating verb refuses it:
 * docs/refusals.md). Its way out is the root's `next` (status names the root). A quiesce is
 * busy (amber) while its `owner` runs, as status judges it, and blocks once the owner is gone.
 */
export function journalFact(j: JournalEntry, owner?: "alive" | "dead" | "unknown"): Fact {
  if (j.op === "space-rm") return { text: `space-rm ${j.space} since ${j.startedAt}${j.streamsDeleted ? " (streams deleted)" : ""}: re-run the removal`, severity: "block" };
  if (j.op === "cut") return { text: `preserve-state cut ${j.cutId}, ${j.state} since ${j.readyAt ?? j.startedAt}${j.attempt ? `; ${j.attempt.kind} attempt on ${j.attempt.space}` : ""}`, severity: "block" };
  if (j.op === "quiesce") return { text: `quiesce of space ${j.space} by online ${j.purpose} ${j.attemptId} (${j.stage}) since ${j.startedAt}${owner === "dead" ? `; its owner (pid ${j.owner.pid}) is gone` : ""}`, severity: owner === "dead" ? "block" : "warn" };
  return { text: `rotate-sys to generation ${j.generation} since ${j.startedAt}`, severity: "block" };
}

/** Pure: the pending claim in words; a claim is a mutation not yet committed, red until a writer settles it. */
export function pendingFact(p: PendingMutation): Fact {
  return { text: `${p.op} +[${p.adds.join(", ")}] -[${p.removes.join(", ")}] → generation ${p.generation} by ${p.writer} since ${p.claimedAt}${p.stagedDigest ? " (staged)" : ""}`, severity: "block" };
}

/** Pure: the lock holder; a live holder is busy (amber: it clears by itself), a dead or unreadable lock blocks. */
export function lockFact(l: LockHolder | "corrupt"): Fact {
  if (l === "corrupt") return { text: "unreadable lock file", severity: "block" };
  return { text: `pid ${l.pid} on ${l.host} (${l.purpose}, ${l.status}, since ${l.startedAt})`, severity: l.status === "alive" ? "warn" : "block" };
}

/** Pure: a fact as markup, its `next` on a line of its own. */
export function factHtml(f: Fact, id?: string): Html {
  return html`<span class="sev-${f.severity}"${id ? html` id="${id}"` : ""}>${f.text}</span>${f.next ? html`<div class="next">next: <code>${f.next}</code></div>` : ""}`;
}
