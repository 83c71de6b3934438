import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire, Module as NodeModule } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { constants, Script } from "node:vm";
import { crc32 } from "node:zlib";

/**
 * V8's compiled code for the bundle's chunks, kept between runs (issue 35): Node 20 has no compile cache
 * (`module.enableCompileCache` is 22.1+) and none at all for ES modules, so the CLI proper is CommonJS and
 * its chunks are compiled through `vm.Script` with the `cachedData` of an earlier run. A verb's start
 * then skips most of compiling ~1.3 MB of JavaScript (docs/development.md, "The CLI bundle").
 */

/**
 * The cache's directory: `<tmp>/cotal-v8-cache-<uid>/<node version>-<arch>`, as Node 22 keeps its own in
 * the temp dir; undefined (no cache) when NODE_DISABLE_COMPILE_CACHE is set, or when either level is not a
 * directory of this user's closed to everyone else: cached data is code, so only our own is loaded.
 */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env, uid: number | null = process.getuid?.() ?? null, tmp: string = tmpdir()): string | undefined {
  if (env.NODE_DISABLE_COMPILE_CACHE || uid === null) return undefined; // no uid (Windows): no way to tell the directory is ours
  const top = join(tmp, `cotal-v8-cache-${uid}`);
  const dir = join(top, `${process.version}-${process.arch}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const d of [top, dir]) {
      const st = lstatSync(d);
      if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return undefined;
    }
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * A chunk's cache file: the CRC-32 of its bundle's directory (two checkouts never share an entry), then
 * its name without the build's hash, so a rebuilt chunk replaces its old entry instead of piling up. The
 * file starts with the CRC-32 of the source it was made from: V8 checks only the source's length, so a
 * rebuilt run.cjs naming other chunks (same length) would otherwise run its old code.
 */
export function cacheFileOf(cacheDir: string, chunk: string): string {
  const bundle = crc32(dirname(chunk)).toString(16).padStart(8, "0");
  return join(cacheDir, `${bundle}-${basename(chunk).replace(/-[A-Za-z0-9_-]{8}(\.cjs)$/, "$1")}.v8`);
}

type Compile = (this: NodeJS.Module, content: string, filename: string) => unknown;
const Module = NodeModule as unknown as { prototype: { _compile: Compile }; wrap(code: string): string };

/**
 * From now on, every `.cjs` file of `bundleDir` that Node loads is compiled with its cached code, and the
 * code of those without any (or whose cache V8 rejected) is written at exit, after the verb ran, so the
 * functions it compiled lazily are in it. Writes are atomic (a temp file, then a rename), 0600.
 */
export function compileWithCodeCache(bundleDir: string, cacheDir: string): void {
  const original = Module.prototype._compile;
  const fresh: { script: Script; file: string; sum: number }[] = [];
  Module.prototype._compile = function compile(this: NodeJS.Module, content: string, filename: string): unknown {
    if (dirname(filename) !== bundleDir || !filename.endsWith(".cjs")) return original.call(this, content, filename);
    const file = cacheFileOf(cacheDir, filename);
    const sum = crc32(content);
    let cachedData: Buffer | undefined;
    try {
      const raw = readFileSync(file);
      if (raw.length > 4 && raw.readUInt32BE(0) === sum) cachedData = raw.subarray(4);
    } catch {
      // first run of this build: compiled as usual, cached at exit
    }
    const script = new Script(Module.wrap(content), { filename, ...(cachedData ? { cachedData } : {}), importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
    if (!cachedData || script.cachedDataRejected) fresh.push({ script, file, sum });
    const wrapper = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    return wrapper.call(this.exports, this.exports, createRequire(filename), this, filename, dirname(filename));
  };
  process.once("exit", () => {
    for (const { script, file, sum } of fresh) {
      const tmp = `${file}.${process.pid}`;
      const head = Buffer.alloc(4);
      head.writeUInt32BE(sum);
      try {
        writeFileSync(tmp, Buffer.concat([head, script.createCachedData()]), { mode: 0o600 });
        renameSync(tmp, file);
      } catch {
        // a full or read-only temp dir: the next run compiles as usual
      }
    }
  });
}
