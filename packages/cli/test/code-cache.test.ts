import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { cacheFileOf, codeCacheDir } from "../src/code-cache.js";

// V8's compiled code of the bundle's chunks, kept between runs (issue 35): cached data is code, so only a
// directory of this user's closed to others is used, and a cache V8 rejects only costs a compile.
const BIN = fileURLToPath(new URL("../dist/bundle/cotal.js", import.meta.url));
const BUNDLE_DIR = dirname(BIN);
const uid = process.getuid?.() ?? 0;
const scratch: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "cotal-code-cache-test-"));
  scratch.push(d);
  return d;
};
afterEach(() => {
  for (const d of scratch.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the CLI's V8 code cache", () => {
  it("lives in <tmp>/cotal-v8-cache-<uid>/<node>-<arch>, made 0700; none when disabled, without a uid, or when the directory is open to others", () => {
    const t = tmp();
    const dir = codeCacheDir({}, uid, t);
    expect(dir).toBe(join(t, `cotal-v8-cache-${uid}`, `${process.version}-${process.arch}`));
    expect(statSync(dir as string).mode & 0o777).toBe(0o700);
    expect(codeCacheDir({ NODE_DISABLE_COMPILE_CACHE: "1" }, uid, t)).toBeUndefined();
    expect(codeCacheDir({}, null, t)).toBeUndefined();
    const open = tmp();
    mkdirSync(join(open, `cotal-v8-cache-${uid}`), { mode: 0o700 });
    chmodSync(join(open, `cotal-v8-cache-${uid}`), 0o777); // a planted or shared directory: not trusted
    expect(codeCacheDir({}, uid, open)).toBeUndefined();
    expect(codeCacheDir({}, uid + 1, tmp()), "a directory that is not the user's").toBeUndefined();
  });

  it("keys each chunk by its bundle's directory and its name without the build's hash: a rebuild replaces its entry, another checkout has its own", () => {
    const b = crc32("/b").toString(16).padStart(8, "0");
    expect(cacheFileOf("/c", "/b/chunk-core-FEucueJU.cjs")).toBe(`/c/${b}-chunk-core.cjs.v8`);
    expect(cacheFileOf("/c", "/b/chunk-core-Zq0_x-9A.cjs"), "the next build's core chunk").toBe(`/c/${b}-chunk-core.cjs.v8`);
    expect(cacheFileOf("/c", "/b/chunk-rolldown-runtime-C-fzZZTt.cjs")).toBe(`/c/${b}-chunk-rolldown-runtime.cjs.v8`);
    expect(cacheFileOf("/c", "/b/run.cjs")).toBe(`/c/${b}-run.cjs.v8`);
    expect(cacheFileOf("/c", "/other-checkout/run.cjs")).not.toBe(cacheFileOf("/c", "/b/run.cjs"));
  });

  it("never runs a cache made for other source of the same length (V8 checks only the length): a rebuilt chunk runs its new code", () => {
    const t = tmp();
    const bundle = join(t, "bundle");
    mkdirSync(bundle);
    const chunk = join(bundle, "run.cjs");
    const loader = join(t, "load.mjs");
    const codeCache = new URL("../dist/code-cache.js", import.meta.url).href;
    writeFileSync(loader, `import { createRequire } from "node:module";\nconst { codeCacheDir, compileWithCodeCache } = await import(${JSON.stringify(codeCache)});\ncompileWithCodeCache(${JSON.stringify(bundle)}, codeCacheDir(process.env, process.getuid(), ${JSON.stringify(t)}));\ncreateRequire(import.meta.url)(${JSON.stringify(chunk)});\n`);
    const runIt = () => spawnSync(process.execPath, [loader], { encoding: "utf8" }).stdout.trim();
    writeFileSync(chunk, 'console.log("built-one");\n');
    expect(runIt()).toBe("built-one");
    expect(runIt(), "from its cache").toBe("built-one");
    writeFileSync(chunk, 'console.log("built-two");\n'); // the same length, as a rebuilt run.cjs naming other chunks
    expect(runIt()).toBe("built-two");
  });

  it("the bundle writes it on its first run (0600), reads it on the next, and a corrupt entry only costs a compile: the same output each time", () => {
    const t = tmp();
    const run = () => spawnSync(process.execPath, [BIN, "--root", join(t, "no-root"), "status"], { encoding: "utf8", env: { ...process.env, TMPDIR: t } });
    const first = run();
    expect(first.status).toBe(5); // root-missing
    const dir = join(t, `cotal-v8-cache-${uid}`, `${process.version}-${process.arch}`);
    const files = readdirSync(dir);
    const entryOf = (chunk: string): string => basename(cacheFileOf(dir, join(BUNDLE_DIR, chunk)));
    const start = readdirSync(BUNDLE_DIR).find((f) => /^chunk-start-.*\.cjs$/.test(f)) as string;
    expect(files).toEqual(expect.arrayContaining([entryOf("run.cjs"), entryOf(start)]));
    for (const f of files) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    const second = run();
    expect([second.status, second.stdout, second.stderr]).toEqual([first.status, first.stdout, first.stderr]);
    writeFileSync(join(dir, entryOf(start)), "not V8's data");
    const third = run();
    expect([third.status, third.stdout, third.stderr]).toEqual([first.status, first.stdout, first.stderr]);
    expect(statSync(join(dir, entryOf(start))).size, "rewritten after V8 rejected it").toBeGreaterThan(1000);
  });
});
