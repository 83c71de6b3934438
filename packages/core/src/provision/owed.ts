import { hostname } from "node:os";
import { readdirSync, rmSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterPid, RERUN, CotalError } from "../errors.js";
import { ownerStatus, selfOwner, type ProcessOwner } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir, readTextIfExists, writeJsonAtomic } from "../root/secret-files.js";
import { isValidSpaceName } from "../names.js";

/**
 * Spaces whose streams, buckets or $SYS creds may still be owed (docs/saga.md, "Provisioning after
 * the commit"). Each owing verb writes its own marker, `maintenance/provisioning.d/<token>.json`,
 * under the lock before the saga that trusts them, and removes it once provisioned, which a `space
 * add` does after it released the lock: one file per owner, so no two processes ever rewrite the
 * same file. A verb killed in between leaves its marker: `status` shows it, `up` settles it, and
 * `space rm` of a space a live owner still provisions waits for it (awaitProvisioned).
 */
export interface ProvisioningOwed {
  spaces: string[];
  since: string;
  /** A marker could not be read: which spaces are owed is unknown, so all served ones are. */
  unreadable?: true;
}

/** One owing verb's marker. */
export interface OwedMarker {
  spaces: string[];
  since: string;
  owner: ProcessOwner;
}

export interface OwedHandle {
  readonly file: string;
  readonly spaces: readonly string[];
}

function markerDir(layout: RootLayout): string {
  return join(layout.maintenanceDir, "provisioning.d");
}

type Read = { file: string; marker: OwedMarker } | { file: string; unreadable: true };

function parseMarker(text: string): OwedMarker | undefined {
  try {
    const v = JSON.parse(text) as Partial<OwedMarker>;
    if (!Array.isArray(v.spaces) || !v.spaces.every((s) => typeof s === "string" && isValidSpaceName(s))) return undefined;
    if (typeof v.owner?.pid !== "number" || typeof v.owner.host !== "string") return undefined;
    return { spaces: v.spaces, since: typeof v.since === "string" ? v.since : "unknown", owner: v.owner };
  } catch {
    return undefined;
  }
}

function readOne(file: string): Read | undefined {
  let text: string | undefined;
  try {
    text = readTextIfExists(file);
  } catch {
    return { file, unreadable: true };
  }
  if (text === undefined) return undefined;
  const marker = parseMarker(text);
  return marker ? { file, marker } : { file, unreadable: true };
}

function readAll(layout: RootLayout): Read[] {
  const out: Read[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(markerDir(layout)).filter((f) => f.endsWith(".json"));
  } catch {
    // no marker directory: nothing owed
  }
  for (const f of names.sort()) {
    const r = readOne(join(markerDir(layout), f));
    if (r) out.push(r);
  }
  return out;
}

/** Everything owed on this root, every owner's marker together. */
export function readProvisioningOwed(layout: RootLayout): ProvisioningOwed | undefined {
  const all = readAll(layout);
  if (all.length === 0) return undefined;
  const spaces = new Set<string>();
  let since: string | undefined;
  let unreadable = false;
  for (const r of all) {
    if ("unreadable" in r) {
      unreadable = true;
      continue;
    }
    for (const s of r.marker.spaces) spaces.add(s);
    const t = r.marker.since;
    if (t && (since === undefined || t < since)) since = t;
  }
  return { spaces: [...spaces].sort(), since: since ?? "unknown", ...(unreadable ? { unreadable: true as const } : {}) };
}

/** Writes this verb's own marker for `spaces` (the caller holds the maintenance lock). */
export function oweProvisioning(layout: RootLayout, spaces: readonly string[]): OwedHandle {
  ensureSecretDir(markerDir(layout));
  const file = join(markerDir(layout), `${process.pid}-${randomUUID()}.json`);
  const list = [...new Set(spaces)].sort();
  writeJsonAtomic(file, { spaces: list, since: new Date().toISOString(), owner: selfOwner() } satisfies OwedMarker);
  return { file, spaces: list };
}

/** Removes one verb's marker: its spaces are provisioned (or were never trusted). */
export function settleOwed(handle: OwedHandle, spaces?: readonly string[]): void {
  const cur = readOne(handle.file);
  if (!cur || "unreadable" in cur) {
    rmSync(handle.file, { force: true });
    return;
  }
  const drop = new Set(spaces ?? cur.marker.spaces);
  const left = cur.marker.spaces.filter((s) => !drop.has(s));
  if (left.length === 0) rmSync(handle.file, { force: true });
  else writeJsonAtomic(handle.file, { ...cur.marker, spaces: left });
}

function mine(owner: ProcessOwner): boolean {
  const me = selfOwner();
  return owner.pid === me.pid && owner.host === me.host;
}

/**
 * Settles `spaces` (all when omitted) from the markers this process owns and (all only) every dead
 * owner's marker. A live owner's marker stays: it is still provisioning, and
 * removing it would let a `space rm` race its stream creation (docs/saga.md).
 */
export function settleProvisioning(layout: RootLayout, spaces?: readonly string[]): void {
  const drop = spaces ? new Set(spaces) : undefined;
  for (const r of readAll(layout)) {
    if ("unreadable" in r) {
      if (!drop) rmSync(r.file, { force: true }); // `up` provisioned every served space: nothing it could name stays owed
      continue;
    }
    const m = r.marker;
    const ours = mine(m.owner) || (!drop && ownerStatus(m.owner) === "dead");
    if (!ours) continue;
    const left = drop ? m.spaces.filter((s) => !drop.has(s)) : [];
    if (left.length === 0) rmSync(r.file, { force: true });
    else writeJsonAtomic(r.file, { ...m, spaces: left });
  }
}

/**
 * The live processes whose markers owe `space`, this one included: a worker provisions one batch
 * while it runs a `space rm` job in the same process.
 */
export function liveProvisioners(layout: RootLayout, space: string): ProcessOwner[] {
  const out: ProcessOwner[] = [];
  for (const r of readAll(layout)) {
    if ("unreadable" in r) continue;
    if (!r.marker.spaces.includes(space)) continue;
    if (ownerStatus(r.marker.owner) !== "dead") out.push(r.marker.owner);
  }
  return out;
}

/**
 * Waits until no live process provisions `space` any more (the caller holds the maintenance lock,
 * so nobody starts to owe it meanwhile), or refuses `lock-held` naming the owner after `waitMs`.
 */
export async function awaitProvisioned(layout: RootLayout, space: string, waitMs: number, onNotice?: (m: string) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const live = liveProvisioners(layout, space);
    if (live.length === 0) return;
    const who = live.map((o) => `pid ${o.pid} on ${o.host}`).join(", ");
    if (Date.now() >= deadline) {
      throw new CotalError("lock-held", `space ${space} is still being provisioned by ${who} (a space add that already committed)`, {
        next: live.length === 1 && live[0]?.host === hostname() ? afterPid(live[0].pid) : `${RERUN}   # once ${who} finished provisioning`,
        details: { space, owners: live },
      });
    }
    if (!told) onNotice?.(`waiting for ${who} to finish provisioning ${space}`);
    told = true;
    await new Promise((r) => setTimeout(r, 50));
  }
}
