import { type Guards } from "../guards.js";
import { execFile } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { CotalError } from "../errors.js";
import type { MaintenanceLock } from "../lock/maintenance-lock.js";
import { selfOwner, type ProcessOwner } from "../lock/process-identity.js";
import type { RootLayout } from "../root/layout.js";
import { ensureSecretDir } from "../root/secret-files.js";
import { attemptWorkDir, readCut, writeJournal, type AttemptClaim, type CutEntry, type OwnedPath } from "../journal/journal.js";

export function newAttemptId(): string {
  return `${new Date().toISOString().replace(/[-:.TZ]/g, "").slice(0, 14)}-${randomBytes(4).toString("hex")}`;
}

/**
 * The journaled claim of one backup/restore attempt. Every mutation re-reads the cut under the held
 * lock and writes it back whole, so the journal is the single record recovery trusts.
 */
export class Attempt {
  private constructor(readonly layout: RootLayout, readonly lock: MaintenanceLock, readonly id: string) {}

  /** Claims ownership BEFORE anything exists: every path is journaled pending (no inode yet). */
  static claim(layout: RootLayout, lock: MaintenanceLock, cut: CutEntry, kind: AttemptClaim["kind"], space: string, extra: OwnedPath[] = []): Attempt {
    const id = newAttemptId();
    const paths: OwnedPath[] = [{ role: "work", path: attemptWorkDir(layout, id) }, ...extra];
    const claim: AttemptClaim = { id, kind, space, owner: selfOwner(), startedAt: new Date().toISOString(), stage: "claimed", paths, brokers: [] };
    writeJournal(layout, lock, { ...cut, attempt: claim });
    return new Attempt(layout, lock, id);
  }

  get workDir(): string {
    return attemptWorkDir(this.layout, this.id);
  }

  private update(fn: (a: AttemptClaim) => AttemptClaim): void {
    const cut = readCut(this.layout);
    if (!cut?.attempt || cut.attempt.id !== this.id) {
      throw new CotalError("lock-lost", `attempt ${this.id} is no longer the journal's claim`, { next: "cotal status" });
    }
    writeJournal(this.layout, this.lock, { ...cut, attempt: fn(cut.attempt) });
  }

  stage(stage: string): void {
    this.update((a) => ({ ...a, stage }));
  }

  /** Creates a journaled-pending directory and records its inode: from now on recovery may prove it ours. */
  createDir(role: OwnedPath["role"], path: string): void {
    mkdirSync(path, { mode: 0o700 });
    const st = lstatSync(path);
    this.update((a) => ({ ...a, paths: a.paths.map((p) => (p.role === role && p.path === path ? { ...p, dev: st.dev, ino: st.ino } : p)) }));
  }

  /** The owned paths as journaled now (with whatever inodes were recorded). */
  paths(): OwnedPath[] {
    const a = readCut(this.layout)?.attempt;
    return a?.id === this.id ? a.paths : [];
  }

  /** Fail closed: removes every path whose inode is proven ours and releases the claim, unless one cannot be proven. */
  abandon(): OwnedPath[] {
    const unproven = this.paths().filter((p) => removeProvenPath(p) === "unproven");
    if (unproven.length === 0) this.release();
    return unproven;
  }

  /** The claim as journaled now. */
  claim(): AttemptClaim | undefined {
    const a = readCut(this.layout)?.attempt;
    return a?.id === this.id ? a : undefined;
  }

  broker(owner: ProcessOwner): void {
    this.update((a) => ({ ...a, brokers: [...a.brokers, owner] }));
  }

  /** Journals a stream BEFORE the restore request that may create it (target pass). */
  installing(stream: string): void {
    this.update((a) => ({ ...a, installed: [...new Set([...(a.installed ?? []), stream])] }));
  }

  /** Back to a plain ready cut: the attempt is over and owns nothing any more. */
  release(): void {
    const cut = readCut(this.layout);
    if (cut?.attempt?.id !== this.id) return;
    const { attempt: _a, ...rest } = cut;
    writeJournal(this.layout, this.lock, rest);
  }
}

/** Removes an owned path only when its inode is still the one the attempt recorded. */
export function removeProvenPath(p: OwnedPath): "removed" | "absent" | "unproven" {
  let st;
  try {
    st = lstatSync(p.path);
  } catch {
    return "absent";
  }
  if (p.ino === undefined || st.ino !== p.ino || st.dev !== p.dev) return "unproven";
  rmSync(p.path, { recursive: true, force: true });
  return "removed";
}

/**
 * The clone a private broker needs for one tenant: only `jetstream/<account>/` (its streams,
 * consumers and their metadata). nats-server keeps each account's JetStream state under its own
 * directory of the store and a standalone server keeps nothing else there it must read to start;
 * the private broker preloads no other tenant, so a whole-store copy only costs disk and time
 * (docs/lifecycle.md "Backup and restore"). The preserved store stays untouched either way.
 */
export async function cloneSpaceStore(from: string, to: string, accountKey: string, guards: Guards): Promise<void> {
  if (guards.CLONE_WHOLE_STORE) return copyTree(`${from}/.`, to);
  ensureSecretDir(to);
  const jetstreamDir = join(to, "jetstream");
  ensureSecretDir(jetstreamDir);
  const mine = join(from, "jetstream", accountKey);
  if (existsSync(mine)) await copyTree(mine, jetstreamDir);
}

/** cp -a of `from` into `to` (created 0700 first). */
function copyTree(from: string, to: string): Promise<void> {
  ensureSecretDir(to);
  return new Promise<void>((resolve, reject) => {
    execFile("cp", ["-a", from, to], (err, _o, stderr) => {
      if (err) reject(new CotalError("io", `cloning ${from} to ${to} failed: ${stderr || err.message}`, { next: `check free space under ${to}`, cause: err }));
      else resolve();
    });
  });
}
