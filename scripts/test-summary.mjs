// Sums the vitest JSON reports under a directory (one subdirectory per run: units, live-<version>)
// into a line per run and one closing line CI can read; exits 1 when anything failed or nothing passed.
// It also counts the distinct cells that ran (passed or failed) anywhere: a live cell run on three
// servers is one cell. With --floor FILE it exits 1 when that count is below the number in FILE
// (.ci/cells-floor: a change to CI's layout must not quietly run fewer cells; docs/ci.md). A cell a run
// skipped that another run executed (a live cell CI runs on the default server only) is counted as
// "run elsewhere", not as skipped.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { reportFailures } from "./vitest-failures.mjs";

const root = process.argv[2];
const floorAt = process.argv.indexOf("--floor");
const floorFile = floorAt > 0 ? process.argv[floorAt + 1] : undefined;
// Every cell that ran, by "<run kind> <file> > <full name>", the server's version taken out of the name.
const executed = new Set();
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
      const t = runs.get(run) ?? { passed: 0, failed: 0, skipped: 0, skippedKeys: [] };
      t.passed += r.numPassedTests ?? 0;
      t.failed += r.numFailedTests ?? 0;
      for (const f of reportFailures(r)) {
        const file = relative(process.cwd(), f.file);
        if (f.title === undefined) {
          t.failed += 1; // numFailedTests has no test for it
          failures.push(`${run}: ${file} (the file failed: ${f.message})`);
        } else failures.push(`${run}: ${file} > ${f.title} (${f.message})`);
      }
      const version = /^live-(.+)$/.exec(run.split("/")[0] ?? "")?.[1];
      const kind = version === undefined ? "unit" : "live";
      for (const f of r.testResults ?? []) {
        for (const a of f.assertionResults ?? []) {
          const name = version === undefined ? a.fullName : String(a.fullName).split(version).join("<server>");
          const key = `${kind} ${relative(process.cwd(), f.name ?? "?")} > ${name}`;
          if (a.status === "passed" || a.status === "failed") executed.add(key);
          else t.skippedKeys.push(key);
        }
      }
      runs.set(run, t);
    }
  }
}

walk(root);
if (runs.size === 0) {
  console.log("cotal tests: no report found");
  process.exit(1);
}
const total = { passed: 0, failed: 0, skipped: 0, elsewhere: 0 };
for (const [run, t] of [...runs].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))) {
  t.elsewhere = t.skippedKeys.filter((k) => executed.has(k)).length;
  t.skipped = t.skippedKeys.length - t.elsewhere;
  if (runs.size > 1) console.log(`${run}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${t.elsewhere > 0 ? ` (${t.elsewhere} more run elsewhere)` : ""}`);
  for (const k of Object.keys(total)) total[k] += t[k];
}
for (const f of failures) console.log(`FAILED ${f}`);
const cells = { unit: 0, live: 0 };
for (const key of executed) cells[key.startsWith("unit ") ? "unit" : "live"] += 1;
console.log(`distinct cells executed: ${executed.size} (unit ${cells.unit}, live ${cells.live})`);
let belowFloor = false;
if (floorFile !== undefined) {
  const floor = Number(readFileSync(floorFile, "utf8").trim());
  belowFloor = !(executed.size >= floor);
  if (belowFloor) console.log(`FAILED fewer distinct cells than ${floorFile} asks (${executed.size} < ${floor}): a cell stopped running somewhere`);
}
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed > 0 || total.passed === 0 || belowFloor ? 1 : 0);
