#!/usr/bin/env bash
# Runs the live race/crash matrix N times (default 20) and reports every cell that ever failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1
runs="${1:-20}"
out="test-live/reports/repeat-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  COTAL_MATRIX_DIR="$PWD/$out/run-$i" pnpm --filter @cotal/test-live exec vitest run suites/matrix.test.ts suites/reconcile.test.ts >"$out/run-$i.log" 2>&1
  echo "run $i/$runs: exit $?"
done
node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const fails = {}, totals = {};
for (const run of fs.readdirSync(dir).filter((d) => d.startsWith("run-") && fs.statSync(path.join(dir, d)).isDirectory())) {
  const cells = path.join(dir, run, "cells");
  if (!fs.existsSync(cells)) continue;
  for (const f of fs.readdirSync(cells)) {
    const c = JSON.parse(fs.readFileSync(path.join(cells, f), "utf8"));
    totals[c.cell] = (totals[c.cell] ?? 0) + 1;
    if (c.result !== "pass") (fails[c.cell] ??= []).push(`${run}: ${c.error ?? "failed"}`);
  }
}
for (const cell of Object.keys(totals).sort()) console.log(`${fails[cell] ? "FLAKY" : "ok   "} ${cell}: ${totals[cell] - (fails[cell]?.length ?? 0)}/${totals[cell]} passed`);
for (const [cell, list] of Object.entries(fails)) for (const l of list) console.log(`  ${cell} — ${l}`);
process.exit(Object.keys(fails).length ? 1 : 0);
' "$out"
