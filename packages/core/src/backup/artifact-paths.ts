/**
 * The directories a backup writes and a restore reads, checked before anything is quiesced, cut,
 * created or enqueued (issue #29): a bad `--out` or `--from` is an `io` refusal naming the path, the
 * reason, and a command that runs once pasted (RERUN / rerunWith, rendered by the caller as the
 * operator's own command line: error-shape.ts). Reads only; the one write is a probe directory in the
 * parent, removed at once, because `access(2)` says yes to root on a mode it ignores and on /proc.
 */
import { accessSync, constants, lstatSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, statfsSync, statSync, type Stats } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { RERUN, rerunWith, CotalError, isCotalError } from "../errors.js";
import { loadSpaceAccount } from "../root/account-store.js";
import { RootLayout } from "../root/layout.js";
import { treeBytes } from "../root/tree-bytes.js";
import { MANIFEST_FILE, verifyArtifact, type BackupManifest, type Checkpoints } from "./artifact.js";

export interface PathCheckOptions {
  space: string;
  /** What the artifact will take (the space's size, spaceStoreBytes); its file system must hold this plus a margin. */
  needBytes?: number;
  /** The root: its parent is the first place a directory with room is looked for. */
  root?: string;
}

/** Head room past the space's size: a snapshot's framing, the manifest, and whatever else writes there meanwhile. */
export function marginFor(needBytes: number): number {
  return Math.max(16 * 1024 * 1024, Math.ceil(needBytes / 10));
}

function mib(n: number): string {
  return `${(n / 1_048_576).toFixed(1)} MiB`;
}

function quote(path: string): string {
  return `'${path.replace(/'/g, `'\\''`)}'`;
}

function io(message: string, next: string, details: Record<string, unknown>): CotalError {
  return new CotalError("io", message, { next, details });
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** `<path>.1`, `<path>.2`, …: the first sibling nothing occupies. */
export function freeSibling(path: string): string {
  for (let i = 1; ; i++) if (!exists(`${path}.${i}`)) return `${path}.${i}`;
}

/** The deepest existing ancestor of `path` (itself included), or the one whose stat failed otherwise than ENOENT/ENOTDIR. */
function nearestExisting(path: string): { path: string; st?: Stats; errno?: string } {
  let cur = path;
  for (;;) {
    try {
      return { path: cur, st: statSync(cur) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EIO";
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(cur) === cur) return { path: cur, errno: code };
      cur = dirname(cur);
    }
  }
}

/** Why this user cannot create entries in `dir`, or undefined: access(2), then a real mkdir (root ignores modes; /proc refuses anyway). */
function cannotWrite(dir: string): string | undefined {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    rmdirSync(mkdtempSync(join(dir, ".cotal-write-probe-")));
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? "EIO";
  }
}

function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return Number(s.bavail) * Number(s.bsize);
}

/** A directory other than `dir` this user may write that holds `need` bytes: the root's parent, then the home directory. */
function roomElsewhere(dir: string, need: number, root: string | undefined): string | undefined {
  const candidates = [root === undefined ? undefined : dirname(resolve(root)), homedir()].filter((c): c is string => c !== undefined && c !== dir);
  for (const c of candidates) {
    try {
      if (statSync(c).isDirectory() && cannotWrite(c) === undefined && freeBytes(c) >= need) return c;
    } catch {
      // not a candidate
    }
  }
  return undefined;
}

/** The next step when `dir` cannot take the artifact and chmod cannot help: the same command into a directory that can. */
function elsewhere(flag: string, abs: string, dir: string, need: number, opts: PathCheckOptions, why: string): string {
  const alt = roomElsewhere(dir, need, opts.root);
  return alt ? `${rerunWith({ [flag]: freeSibling(join(alt, basename(abs))) })}   # ${why}` : `df -h ${quote(dir)}   # ${why}: free space there or pick another ${flag}, then: ${RERUN}`;
}

/** `dir` (existing) must let this user create entries and hold the artifact, or an `io` refusal says which and what to run. */
function assertUsable(dir: string, abs: string, flag: string, opts: PathCheckOptions): void {
  const need = (opts.needBytes ?? 0) + marginFor(opts.needBytes ?? 0);
  const errno = cannotWrite(dir);
  if (errno !== undefined) {
    const ours = typeof process.getuid === "function" && statSync(dir).uid === process.getuid();
    const next = ours && (errno === "EACCES" || errno === "EPERM") ? `chmod u+wx ${quote(dir)} && ${RERUN}` : elsewhere(flag, abs, dir, need, opts, `${dir} is not writable here`);
    throw io(`${dir} does not let this user create ${abs} (${errno}); nothing was changed`, next, { path: abs, dir, reason: "not-writable", errno });
  }
  const free = freeBytes(dir);
  if (free < need) {
    const size = opts.needBytes ?? 0;
    throw io(`the file system of ${dir} has ${mib(free)} free; backing up space ${opts.space} into ${abs} needs ${mib(need)} (its ${mib(size)} plus a ${mib(need - size)} margin); nothing was changed`, elsewhere(flag, abs, dir, need, opts, `${dir} lacks room`), {
      path: abs,
      dir,
      reason: "no-space",
      freeBytes: free,
      needBytes: need,
    });
  }
}

/** The nearest existing ancestor of `from` (the directory `abs` goes in), refused unless it is a searchable directory. */
function existingAncestor(from: string, abs: string, flag: string): string {
  const near = nearestExisting(from);
  if (near.errno !== undefined) {
    throw io(`cannot look up ${near.path} to create ${abs} (${near.errno}); nothing was changed`, `ls -ld ${quote(near.path)}   # who may search it; once this user may: ${RERUN}`, { path: abs, dir: near.path, reason: "not-searchable", errno: near.errno });
  }
  if (!near.st?.isDirectory()) {
    const alt = freeSibling(join(dirname(near.path), basename(abs)));
    throw io(`${near.path} is not a directory, so ${abs} cannot be created under it; nothing was changed`, rerunWith({ [flag]: alt }), { path: abs, dir: near.path, reason: "not-a-directory" });
  }
  return near.path;
}

/**
 * `--out` of a one-off backup: a directory the backup creates itself. Returns its absolute path, or
 * refuses `io` when it exists, its parent is missing or not a directory, not writable by this user,
 * or its file system holds less than `needBytes` plus a margin.
 */
export function checkBackupOut(out: string, opts: PathCheckOptions): string {
  const abs = resolve(out);
  if (exists(abs)) {
    throw io(`${abs} already exists; a backup creates its own directory and never writes into one; nothing was changed`, rerunWith({ "--out": freeSibling(abs) }), { path: abs, reason: "exists" });
  }
  const dir = existingAncestor(dirname(abs), abs, "--out");
  assertUsable(dir, abs, "--out", opts);
  const parent = dirname(abs);
  if (dir !== parent) throw io(`the parent of ${abs} does not exist (${parent}); nothing was changed`, `mkdir -p ${quote(parent)} && ${RERUN}`, { path: abs, dir: parent, reason: "parent-missing" });
  return abs;
}

/**
 * `--out` of scheduled backups: the directory dated artifacts go into. An existing writable directory
 * with room, or one this user can create (each run creates it if absent); else an `io` refusal.
 */
export function checkScheduleDir(dir: string, opts: PathCheckOptions): string {
  const abs = resolve(dir);
  let st: Stats | undefined;
  try {
    st = statSync(abs);
  } catch {
    // absent (or under a non-directory): judged by its nearest existing ancestor
  }
  if (st && !st.isDirectory()) {
    throw io(`${abs} is not a directory; scheduled backups write dated artifact directories into it; nothing was changed`, rerunWith({ "--out": freeSibling(abs) }), { path: abs, reason: "not-a-directory" });
  }
  assertUsable(st ? abs : existingAncestor(abs, abs, "--out"), abs, "--out", opts);
  return abs;
}

/** The newest directory beside `abs` that holds a manifest (a complete artifact), if any. */
function newestArtifactBeside(abs: string): string | undefined {
  const dir = dirname(abs);
  try {
    return readdirSync(dir)
      .map((n) => join(dir, n))
      .filter((p) => p !== abs && exists(join(p, MANIFEST_FILE)))
      .map((p) => ({ p, at: statSync(join(p, MANIFEST_FILE)).mtimeMs }))
      .sort((a, b) => b.at - a.at)[0]?.p;
  } catch {
    return undefined;
  }
}

/** The next step for a `--from` that is no artifact, and the artifact it suggests (`details.suggestion`, for callers whose path is no flag). */
function restoreNext(abs: string, why: string): { next: string; suggestion?: string } {
  const near = newestArtifactBeside(abs);
  if (near) return { next: `${rerunWith({ "--from": near })}   # the newest complete artifact beside it`, suggestion: near };
  return { next: `ls -la ${quote(nearestExisting(dirname(abs)).path)}   # ${why}: find the artifact directory (the one holding ${MANIFEST_FILE})` };
}

/**
 * verifyArtifact for a restore's `--from`: a damaged artifact is refused with the re-run from the newest
 * complete artifact beside it (or where to look), never a line with placeholders.
 */
export function verifyRestoreFrom(abs: string, onBytes?: (n: number) => void): { manifest: BackupManifest; checkpoints: Checkpoints } {
  try {
    return verifyArtifact(abs, onBytes);
  } catch (err) {
    if (!isCotalError(err, "artifact-invalid")) throw err;
    const { next, suggestion } = restoreNext(abs, "this one is damaged");
    throw new CotalError("artifact-invalid", err.message, { next, details: { ...err.details, suggestion }, cause: err });
  }
}

/**
 * `--from` of a restore: an existing directory holding a readable manifest.json. Returns its absolute
 * path; the full check (every file's size and sha256) is verifyArtifact (artifact.ts).
 */
export function checkRestoreFrom(from: string): string {
  const abs = resolve(from);
  let st: Stats;
  try {
    st = statSync(abs);
  } catch (err) {
    const errno = (err as NodeJS.ErrnoException).code ?? "EIO";
    const { next, suggestion } = restoreNext(abs, "no such artifact");
    throw io(`the backup artifact ${abs} cannot be read (${errno}); nothing was changed`, next, { path: abs, reason: errno === "ENOENT" ? "missing" : "unreadable", errno, suggestion });
  }
  if (!st.isDirectory()) {
    const parent = dirname(abs);
    const { next, suggestion } = exists(join(parent, MANIFEST_FILE)) ? { next: rerunWith({ "--from": parent }), suggestion: parent } : restoreNext(abs, "an artifact is a directory");
    throw io(`${abs} is not a directory; a backup artifact is the directory \`cotal space backup\` wrote; nothing was changed`, next, { path: abs, reason: "not-a-directory", suggestion });
  }
  const manifest = join(abs, MANIFEST_FILE);
  try {
    readFileSync(manifest);
  } catch (err) {
    const errno = (err as NodeJS.ErrnoException).code ?? "EIO";
    if (errno === "ENOENT") {
      // Not an I/O fault: the same refusal the restore itself gives an artifact without its completion marker.
      const { next, suggestion } = restoreNext(abs, "not a complete artifact");
      throw new CotalError("artifact-invalid", `${abs} holds no ${MANIFEST_FILE} (an incomplete or interrupted backup, or not a backup); nothing was changed`, { next, details: { artifact: abs, reason: "no-manifest", suggestion } });
    }
    throw io(`${manifest} cannot be read (${errno}); nothing was changed`, `chmod -R u+rX ${quote(abs)} && ${RERUN}`, { path: manifest, reason: "unreadable", errno });
  }
  return abs;
}

/**
 * What a backup of `space` needs on disk, at most: its account's directory in the store (the largest
 * node's on a cluster root). A snapshot is compressed, so this errs high. 0 when unknown.
 */
export function spaceStoreBytes(root: string, space: string): number {
  try {
    const layout = new RootLayout(root);
    const key = loadSpaceAccount(layout, space)?.publicKey;
    if (!key) return 0;
    let nodes: string[] = [];
    try {
      nodes = readdirSync(layout.nodesDir);
    } catch {
      // a single-broker root
    }
    const stores = [layout.storeDir, ...nodes.map((n) => layout.nodeStoreDir(n))];
    return Math.max(0, ...stores.map((s) => treeBytes(join(s, "jetstream", key))));
  } catch {
    return 0;
  }
}
