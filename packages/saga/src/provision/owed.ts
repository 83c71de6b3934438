import { rmSync } from "node:fs";
import type { RootLayout } from "../root/layout.js";
import { readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";
import { isValidSpaceName } from "../names.js";

/**
 * maintenance/provisioning.json: spaces whose streams, buckets or $SYS creds may still be owed.
 * Written before the saga that trusts them and cleared once they are provisioned, so a verb killed
 * between its commit and its provisioning leaves a record `status` shows and `up` settles.
 */
export interface ProvisioningOwed {
  spaces: string[];
  since: string;
  /** The marker could not be read: which spaces are owed is unknown, so all served ones are. */
  unreadable?: true;
}

export function readProvisioningOwed(layout: RootLayout): ProvisioningOwed | undefined {
  let text: string | undefined;
  try {
    text = readTextIfExists(layout.provisioningFile);
  } catch {
    return undefined;
  }
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as ProvisioningOwed;
    if (Array.isArray(v.spaces) && v.spaces.every((s) => typeof s === "string" && isValidSpaceName(s))) return v;
  } catch {
    // fall through
  }
  return { spaces: [], since: "unknown", unreadable: true };
}

/** Adds `spaces` to what is owed (the caller holds the maintenance lock). */
export function oweProvisioning(layout: RootLayout, spaces: readonly string[]): void {
  const cur = readProvisioningOwed(layout);
  const all = [...new Set([...(cur?.spaces ?? []), ...spaces])].sort();
  writeJsonAtomic(layout.provisioningFile, { spaces: all, since: cur?.since ?? new Date().toISOString() } satisfies ProvisioningOwed);
}

/** Settles `spaces` (all of them when omitted), removing the marker once nothing is owed. */
export function settleProvisioning(layout: RootLayout, spaces?: readonly string[]): void {
  const cur = readProvisioningOwed(layout);
  if (!cur) return;
  const left = spaces ? cur.spaces.filter((s) => !spaces.includes(s)) : [];
  if (left.length === 0) rmSync(layout.provisioningFile, { force: true });
  else writeJsonAtomic(layout.provisioningFile, { ...cur, spaces: left });
}
