import { readdirSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync, chmodSync, statSync } from "node:fs";
import { dirname, basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import { SagaError } from "../errors.js";

export const SECRET_FILE_MODE = 0o600;
export const SECRET_DIR_MODE = 0o700;

/** mkdir -p with 0700 on every directory it creates, and the leaf forced to 0700 even if it existed. */
export function ensureSecretDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: SECRET_DIR_MODE });
  if ((statSync(path).mode & 0o777) !== SECRET_DIR_MODE) chmodSync(path, SECRET_DIR_MODE);
}

function fsyncDir(dir: string): void {
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
    throw new SagaError("io", `could not write ${path}: ${(err as Error).message}`, { cause: err });
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

/**
 * Many files at once (a batch of new tenants): each is still temp + fsync + rename, but the fsyncs
 * overlap in libuv's thread pool and every directory is fsynced once at the end, not per file.
 */
export async function writeFilesAtomic(entries: readonly { path: string; data: string | Uint8Array }[], concurrency = 8): Promise<void> {
  const { open, rename, rm } = await import("node:fs/promises");
  const dirs = new Set<string>();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < entries.length) {
      const { path, data } = entries[next++] as { path: string; data: string | Uint8Array };
      const dir = dirname(path);
      dirs.add(dir);
      mkdirSync(dir, { recursive: true, mode: SECRET_DIR_MODE });
      const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
      try {
        const fh = await open(tmp, "wx", SECRET_FILE_MODE);
        try {
          await fh.writeFile(data);
          await fh.sync();
        } finally {
          await fh.close();
        }
        await rename(tmp, path);
      } catch (err) {
        await rm(tmp, { force: true });
        throw new SagaError("io", `could not write ${path}: ${(err as Error).message}`, { cause: err });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, lane));
  for (const d of dirs) fsyncDir(d);
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
