#!/usr/bin/env bash
# Reload cost per tenant on every installed nats-server, back to back in one run (BENCHMARKS.md §3b).
# Usage: scripts/bench-versions.sh [--tenants 10,100,1000,2000] [--runs 5]
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1
pnpm build --output-logs=errors-only >/dev/null
servers=("$(command -v nats-server || echo /usr/sbin/nats-server)")
if command -v go >/dev/null 2>&1; then
  for v in $(bash infra/nats-server.sh pinned); do servers+=("$(bash infra/nats-server.sh path "$v")"); done
fi
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(--tenants 10,100,1000,2000 --runs 5)
for bin in "${servers[@]}"; do
  echo "== $("$bin" --version)"
  NATS_SERVER_BIN="$bin" node packages/bench/dist/reload-cost.js "${args[@]}" | sed -n '/^reload (SIGHUP/,/^wrote/p'
done
