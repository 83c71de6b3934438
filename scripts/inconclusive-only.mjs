// Exits 0 when a vitest JSON report failed only for want of a dense poll (test-live/fixtures/matrix.ts:
// "no dense run in N run(s)", nothing proven either way), 1 otherwise: a removed cred that connected,
// any other failure, or no failure at all. infra/test.sh re-runs such a matrix once after the rest.
import { readFileSync } from "node:fs";
import { reportFailures } from "./vitest-failures.mjs";

const INCONCLUSIVE = /no dense run in \d+ run\(s\)/;
let failures;
try {
  failures = reportFailures(JSON.parse(readFileSync(process.argv[2], "utf8")));
} catch {
  process.exit(1);
}
process.exit(failures.length > 0 && failures.every((f) => f.title !== undefined && INCONCLUSIVE.test(f.message)) ? 0 : 1);
