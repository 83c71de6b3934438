import { GUARDS_ON, type Guards } from "../guards.js";
import { linkSync, readFileSync, rmSync, unlinkSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { afterPid, RERUN, CotalError, isCotalError } from "../errors.js";
import { RootLayout } from "../root/layout.js";
import { ensureSecretDir, writeDurable } from "../root/secret-files.js";
import { ownerStatus, selfOwner, type ProcessOwner } from "./process-identity.js";

export interface LockOwner extends ProcessOwner {
  token: string;
  startedAt: string;
  /** What the holder is doing, for the refusal an operator reads. */
  purpose: string;
}

/** A held root maintenance lock. Helpers that journal under it take it as a parameter, never re-acquire. */
export interface MaintenanceLock {
  readonly root: string;
  readonly path: string;
  readonly owner: LockOwner;
  /** Set only by the SKIP_LOCK test switch: nothing was taken, so nothing is checked or released. */
  readonly unsafeSkipped?: true;
}

function readOwner(path: string): LockOwner | "corrupt" | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const o = JSON.parse(text) as LockOwner;
    if (typeof o.pid !== "number" || typeof o.host !== "string" || typeof o.token !== "string") return "corrupt";
    return o;
  } catch {
    return "corrupt";
  }
}

/**
 * Publishes `owner` at `path` only if nothing is there: write a private temp file, then link(2) it.
 * The temp never outlives the call, a failed write's neither (a full disk left `lock.json.*.tmp`).
 */
function createExclusive(path: string, owner: LockOwner, guards: Guards): boolean {
  const tmp = `${path}.${owner.token}.tmp`;
  let written = false;
  try {
    writeDurable(tmp, `${JSON.stringify(owner, null, 2)}\n`, 0o600, "wx");
    written = true;
    linkSync(tmp, path);
    return true;
  } catch (err) {
    const errno = (err as NodeJS.ErrnoException).code;
    if (written && errno === "EEXIST") return false;
    if (written || errno === undefined) throw err;
    throw new CotalError("io", `could not write the lock ${path}: ${errno}`, { cause: err, next: `${RERUN}   # once the disk has room (nothing was written)`, details: { path, errno } });
  } finally {
    if (written || !guards.KEEP_LOCK_TEMP) rmSync(tmp, { force: true });
  }
}

function describe(o: LockOwner): string {
  return `pid ${o.pid} on ${o.host} (${o.purpose}, since ${o.startedAt})`;
}

/**
 * Removes a dead owner's lock. A second, tiny reap lock serialises reapers, so one reaper can never
 * delete a fresh lock another process took after the first one judged the old lock stale.
 */
function reapStale(path: string, stale: LockOwner, guards: Guards): void {
  const reapPath = `${path}.reap`;
  const me: LockOwner = { ...selfOwner(), token: randomUUID(), startedAt: new Date().toISOString(), purpose: "reaping a stale lock" };
  if (!createExclusive(reapPath, me, guards)) {
    const reaper = readOwner(reapPath);
    if (reaper === "corrupt" || (reaper && ownerStatus(reaper) === "dead")) rmSync(reapPath, { force: true });
    return;
  }
  try {
    const current = readOwner(path);
    if (current !== "corrupt" && current?.token === stale.token) unlinkSync(path);
  } finally {
    rmSync(reapPath, { force: true });
  }
}

/** What taking an owner file found: taken, held by a live (or another host's) owner, unreadable, or changing hands. */
export type OwnerFileResult =
  | { taken: LockOwner }
  | { held: LockOwner; status: "alive" | "unknown" }
  | { corrupt: true }
  | { churn: true };

/**
 * Takes the create-exclusive owner file at `path` (the maintenance lock, a node agent's lock): a dead
 * owner's file (pid gone or recycled) is reaped and taken over; a live one is returned, never waited for.
 */
export function takeOwnerFile(path: string, purpose: string, guards: Guards = GUARDS_ON): OwnerFileResult {
  for (let attempt = 0; attempt < 5; attempt++) {
    const owner: LockOwner = { ...selfOwner(), token: randomUUID(), startedAt: new Date().toISOString(), purpose };
    if (createExclusive(path, owner, guards)) return { taken: owner };
    const held = readOwner(path);
    if (held === undefined) continue; // released between our link and our read
    if (held === "corrupt") return { corrupt: true };
    const status = ownerStatus(held);
    if (status !== "dead") return { held, status };
    reapStale(path, held, guards);
  }
  return { churn: true };
}

/** Removes the owner file at `path` only while it is still `token`'s. */
export function releaseOwnerFile(path: string, token: string): void {
  const held = readOwner(path);
  if (held !== undefined && held !== "corrupt" && held.token === token) unlinkSync(path);
}

export function acquireMaintenanceLock(root: string, purpose: string, guards: Guards = GUARDS_ON): MaintenanceLock {
  const layout = new RootLayout(root);
  ensureSecretDir(layout.maintenanceDir);
  const path = layout.lockFile;
  if (guards.SKIP_LOCK) return { root, path, owner: { ...selfOwner(), token: randomUUID(), startedAt: new Date().toISOString(), purpose }, unsafeSkipped: true };
  const r = takeOwnerFile(path, purpose, guards);
  if ("taken" in r) return { root, path, owner: r.taken };
  if ("corrupt" in r) {
    throw new CotalError("lock-held", `the maintenance lock ${path} is unreadable; its owner cannot be judged`, {
      next: `make sure no cotal command is running on this root, then: rm ${path}`,
    });
  }
  if ("churn" in r) throw new CotalError("lock-held", `could not take the maintenance lock ${path}: it kept changing hands`, { next: RERUN });
  throw new CotalError("lock-held", `the root ${root} is locked by ${describe(r.held)}`, {
    next: r.status === "unknown" ? `the owner runs on another host; wait for it, or confirm it is gone and rm ${path}` : afterPid(r.held.pid),
    details: { owner: r.held },
  });
}

/** Verifies the lock on disk is still this holder's; a helper that journals calls this before writing. */
export function assertLockHeld(lock: MaintenanceLock): void {
  if (lock.unsafeSkipped) return;
  const held = readOwner(lock.path);
  if (held === undefined || held === "corrupt" || held.token !== lock.owner.token) {
    throw new CotalError("lock-lost", `the maintenance lock ${lock.path} is no longer held by this process`, {
      next: `${RERUN}   # another process reaped or replaced the lock`,
      details: { expected: lock.owner.token },
    });
  }
}

/** Releases only our own lock: a token mismatch means someone else holds it now, and we leave it alone. */
export function releaseMaintenanceLock(lock: MaintenanceLock): void {
  if (lock.unsafeSkipped) return;
  releaseOwnerFile(lock.path, lock.owner.token);
}

export function readLockOwner(root: string): (LockOwner & { status: "alive" | "dead" | "unknown" }) | "corrupt" | undefined {
  const held = readOwner(new RootLayout(root).lockFile);
  if (held === undefined || held === "corrupt") return held;
  return { ...held, status: ownerStatus(held) };
}

/** Runs `fn` under a freshly taken lock, or under `held` when a caller hands its lock down (no re-acquire). */
export async function withMaintenanceLock<T>(root: string, purpose: string, held: MaintenanceLock | undefined, fn: (lock: MaintenanceLock) => Promise<T>, guards: Guards = GUARDS_ON): Promise<T> {
  if (held) {
    assertLockHeld(held);
    return fn(held);
  }
  const lock = acquireMaintenanceLock(root, purpose, guards);
  try {
    return await fn(lock);
  } finally {
    releaseMaintenanceLock(lock);
  }
}

/** Waits up to `waitMs` for a live owner to finish (saga verbs queue behind each other on one host). */
export async function waitForMaintenanceLock(root: string, purpose: string, waitMs: number, guards: Guards = GUARDS_ON): Promise<MaintenanceLock> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return acquireMaintenanceLock(root, purpose, guards);
    } catch (err) {
      if (!isCotalError(err, "lock-held") || Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}
