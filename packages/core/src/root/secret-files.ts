import { readdirSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync, chmodSync, statSync } from "node:fs";
import { dirname, basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import { CotalError } from "../errors.js";

export const SECRET_FILE_MODE = 0o600;
export const SECRET_DIR_MODE = 0o700;

/** mkdir -p with 0700 on every directory it creates, and the leaf forced to 0700 even if it existed. */
export function ensureSecretDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: SECRET_DIR_MODE });
  if ((statSync(path).mode & 0o777) !== SECRET_DIR_MODE) chmodSync(path, SECRET_DIR_MODE);
}

/** Makes the names in `dir` (a create, a rename) durable. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Temp file in the same directory, fsync, rename, fsync the directory: a reader sees the old bytes or
 * the new ones, never a torn file, and the rename survives a power cut.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = SECRET_FILE_MODE): void {
  const dir = dirname(path);
  // Creates missing parents 0700 but never re-modes a directory the caller already had (e.g. --out ./x.creds).
  mkdirSync(dir, { recursive: true, mode: SECRET_DIR_MODE });
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    writeDurable(tmp, data, mode, "wx");
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new CotalError("io", `could not write ${path}: ${(err as Error).message}`, { cause: err });
  }
  fsyncDir(dir);
}

/** Writes and fsyncs one file in place (used for staged files whose promotion is a separate rename). */
export function writeDurable(path: string, data: string | Uint8Array, mode = SECRET_FILE_MODE, flag = "w"): void {
  const fd = openSync(path, flag, mode);
  try {
    const buf = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(path, mode);
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Renames within one directory and makes the rename durable. */
export function renameDurable(from: string, to: string): void {
  renameSync(from, to);
  fsyncDir(dirname(to));
}

export function readTextIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export interface BatchWriteOptions {
  /** Files in flight at once (each one open fd and one fsync in libuv's pool). */
  concurrency?: number;
  /** Force each file's own directory to 0700 even if it existed (ensureSecretDir's rule), e.g. space dirs. */
  secretDirs?: boolean;
}

/**
 * Many files at once (a batch of new tenants), off the event loop: each is still temp + fsync +
 * rename, 0600, but the fsyncs overlap in libuv's thread pool (the filesystem's journal commits
 * them together) and every directory is fsynced once at the end, concurrently, not once per file.
 * A directory the batch created is made durable in its parent the same way.
 */
export async function writeFilesAtomic(entries: readonly { path: string; data: string | Uint8Array }[], opts: BatchWriteOptions | number = {}): Promise<void> {
  const { concurrency = 8, secretDirs = false } = typeof opts === "number" ? { concurrency: opts } : opts;
  const { chmod, mkdir, open, rename, rm, stat } = await import("node:fs/promises");
  const dirs = new Map<string, Promise<void>>();
  const synced = new Set<string>();
  const ready = (dir: string): Promise<void> => {
    let p = dirs.get(dir);
    if (!p) {
      p = (async () => {
        const first = await mkdir(dir, { recursive: true, mode: SECRET_DIR_MODE });
        // Each directory it created has its entry in its parent: those parents are synced with the rest.
        if (first !== undefined) for (let d = dir; ; d = dirname(d)) {
          synced.add(dirname(d));
          if (d === first || dirname(d) === d) break;
        }
        if (secretDirs && ((await stat(dir)).mode & 0o777) !== SECRET_DIR_MODE) await chmod(dir, SECRET_DIR_MODE);
      })();
      dirs.set(dir, p);
    }
    return p;
  };
  const writeOne = async ({ path, data }: { path: string; data: string | Uint8Array }): Promise<void> => {
    const dir = dirname(path);
    const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      await ready(dir);
      synced.add(dir);
      const fh = await open(tmp, "wx", SECRET_FILE_MODE);
      try {
        await fh.writeFile(data);
        await fh.chmod(SECRET_FILE_MODE); // the umask may have narrowed it, never widened: make it exact
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined); // e.g. ENOTDIR: there is no temp to remove
      throw new CotalError("io", `could not write ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  await lanes(entries, concurrency, writeOne);
  await lanes([...synced], concurrency, async (dir) => {
    const fh = await open(dir, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  });
}

/** At most `width` of `items` through `fn` at once; the first failure rejects after all lanes stop. */
async function lanes<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, items.length)) }, lane));
  if (failure) throw failure.err;
}

const TEMP = /^\..+\.(\d+)\.[0-9a-f]{8}\.tmp$/;

/**
 * Temp files a killed writer left behind (they may hold seeds): any whose writer pid is gone is
 * removed. Called under the maintenance lock, so no live cotal writer of this root is mid-write.
 */
export function reapStaleTemps(dir: string, alive: (pid: number) => boolean): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const name of names) {
    const m = TEMP.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    rmSync(join(dir, name), { force: true });
    reaped.push(join(dir, name));
  }
  return reaped;
}
