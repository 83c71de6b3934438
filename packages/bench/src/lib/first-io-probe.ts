/**
 * Preloaded by cli-start.ts (`node --import <this file>`) into every arm alike. Prints on stderr the
 * process's CPU time (user + system) at its exit, and, once each, when it first touched a path under
 * $COTAL_BENCH_PROBE_ROOT (`first-touch`: an exists/stat, such as the CLI's root check) and first read one
 * (`first-read`: the verb's own I/O): ms since the process started (performance.now()'s origin) and CPU ms.
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";

const under = process.env.COTAL_BENCH_PROBE_ROOT;
const write = fs.writeSync;
const marked = new Set<string>();
const cpuMs = (): string => {
  const u = process.cpuUsage();
  return ((u.user + u.system) / 1000).toFixed(2);
};

function mark(kind: "first-touch" | "first-read", path: unknown): void {
  if (!under || marked.has(kind) || !String(path).startsWith(under)) return;
  marked.add(kind);
  write(2, `${kind} ${performance.now().toFixed(2)} ${cpuMs()}\n`);
}

type Fn = (...args: never[]) => unknown;

function wrap(f: Fn, kinds: readonly ("first-touch" | "first-read")[]): Fn {
  return function (this: unknown, ...args: never[]) {
    for (const k of kinds) mark(k, args[0]);
    return f.apply(this, args);
  };
}

process.on("exit", () => write(2, `exit ${performance.now().toFixed(2)} ${cpuMs()}\n`));

if (under) {
  // The bundle imports these by name from "node:fs"; syncBuiltinESMExports hands the wrapped ones to those bindings.
  const sync = fs as unknown as Record<string, Fn>;
  const promises = fs.promises as unknown as Record<string, Fn>;
  for (const name of ["existsSync", "statSync", "lstatSync"]) sync[name] = wrap(sync[name] as Fn, ["first-touch"]);
  for (const name of ["readFileSync", "readdirSync", "openSync"]) sync[name] = wrap(sync[name] as Fn, ["first-touch", "first-read"]);
  for (const name of ["readFile", "open"]) promises[name] = wrap(promises[name] as Fn, ["first-touch", "first-read"]);
  syncBuiltinESMExports();
}
