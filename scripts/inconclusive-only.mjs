// Exits 0 when a vitest JSON report failed only for want of a dense poll (test-live/fixtures/matrix.ts:
// "no dense run in N run(s)", nothing proven either way), 1 otherwise: a removed cred that connected,
// any other failure, or no failure at all. infra/test.sh re-runs such a matrix once after the rest.
import { readFileSync } from "node:fs";

const INCONCLUSIVE = /no dense run in \d+ run\(s\)/;
let report;
try {
  report = JSON.parse(readFileSync(process.argv[2], "utf8"));
} catch {
  process.exit(1);
}
const failed = [];
for (const file of report.testResults ?? []) {
  const red = (file.assertionResults ?? []).filter((a) => a.status === "failed");
  if (red.length === 0 && file.status === "failed") process.exit(1); // the file itself failed
  for (const a of red) failed.push(String(a.failureMessages?.[0] ?? ""));
}
process.exit(failed.length > 0 && failed.every((m) => INCONCLUSIVE.test(m.split("\n")[0])) ? 0 : 1);
