import { leaseKeyFor, RootLayout } from "@cotal/core";

/** Every job type cotal knows (reconcile stays interactive: it needs an operator's decision). */
export const JOB_TYPES = ["space-add", "space-rm", "space-backup", "space-restore", "space-revoke", "space-rotate-key"] as const;
export type JobType = (typeof JOB_TYPES)[number];

/** The job types a worker processes today. */
export const PROCESSED_TYPES = ["space-add", "space-rm", "space-backup", "space-restore", "space-revoke", "space-rotate-key"] as const satisfies readonly JobType[];

/** BullMQ key prefix: cotal's keys stay apart from other BullMQ users of the same Redis. */
export const QUEUE_PREFIX = "cotal";

/**
 * The root's identity in Redis: the saga's lease key (sha256 of the real path), so the queue and
 * the writer lease name the same root. Computed on an existing root only (realpath).
 */
export function rootKeyFor(root: string): string {
  return leaseKeyFor(new RootLayout(root));
}

/** One queue per job type per root: a worker serves exactly one root's local files. */
export function queueNameFor(type: JobType, rootKey: string): string {
  return `${type}.${rootKey}`;
}

/**
 * Deterministic job id: the same operation on the same root is the same id, so re-enqueueing while
 * one is pending is a no-op. BullMQ refuses ":" and all-digit custom ids; a type prefix rules out both.
 */
export function jobIdFor(type: JobType, rootKey: string, name: string, suffix?: string): string {
  const id = [type, rootKey, name, ...(suffix === undefined ? [] : [suffix])].join(".");
  if (!isValidJobId(id)) throw new Error(`derived job id ${JSON.stringify(id)} is not a valid BullMQ custom id`);
  return id;
}

/** BullMQ's custom-id rules (job.js): no ":" separator, not an integer as parseInt reads it. */
export function isValidJobId(id: string): boolean {
  return id.length > 0 && !id.includes(":") && `${Number.parseInt(id, 10)}` !== id && !/^\d+$/.test(id);
}
