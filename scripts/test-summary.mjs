// Sums the vitest JSON reports under a directory (one subdirectory per run: units, live-<version>)
// into a line per run and one closing line CI can read; exits 1 when anything failed or nothing passed.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { reportFailures } from "./vitest-failures.mjs";

const root = process.argv[2];
// Reports infra/test.sh replaced by a later run (a matrix whose only failures were sparse polls).
const SUPERSEDED = "superseded";
const runs = new Map();
// Every failing test by run, file and title: CI's log keeps only its tail, so the names go last.
const failures = [];

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === SUPERSEDED) {
      for (const run of readdirSync(p)) console.log(`${run}: its first matrix run was inconclusive (a sparse poll) and ran again; that run counts`);
      continue;
    }
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(".json")) {
      let r;
      try {
        r = JSON.parse(readFileSync(p, "utf8"));
      } catch {
        continue;
      }
      if (typeof r?.numTotalTests !== "number") continue; // matrix tables and cells are not vitest reports
      const run = relative(root, dir) || ".";
      const t = runs.get(run) ?? { passed: 0, failed: 0, skipped: 0 };
      t.passed += r.numPassedTests ?? 0;
      t.failed += r.numFailedTests ?? 0;
      for (const f of reportFailures(r)) {
        const file = relative(process.cwd(), f.file);
        if (f.title === undefined) {
          t.failed += 1; // numFailedTests has no test for it
          failures.push(`${run}: ${file} (the file failed: ${f.message})`);
        } else failures.push(`${run}: ${file} > ${f.title} (${f.message})`);
      }
      t.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
      runs.set(run, t);
    }
  }
}

walk(root);
if (runs.size === 0) {
  console.log("cotal tests: no report found");
  process.exit(1);
}
const total = { passed: 0, failed: 0, skipped: 0 };
for (const [run, t] of [...runs].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
  if (runs.size > 1) console.log(`${run}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`);
  for (const k of Object.keys(total)) total[k] += t[k];
}
for (const f of failures) console.log(`FAILED ${f}`);
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0);
