// Sums the vitest JSON reports of every suite into one closing line CI can read.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
let passed = 0;
let failed = 0;
let skipped = 0;
let files = 0;
for (const f of readdirSync(dir).filter((n) => n.endsWith(".json"))) {
  const r = JSON.parse(readFileSync(join(dir, f), "utf8"));
  files++;
  passed += r.numPassedTests ?? 0;
  failed += (r.numFailedTests ?? 0) + (r.numFailedTestSuites ?? 0);
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
}
if (files === 0) {
  console.log("cotal tests: no report found");
  process.exit(1);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
