#!/usr/bin/env bash
# Every live suite, whole, on every supported nats-server installed here (scripts/servers.sh), for a change
# to version-specific behaviour; CI runs the whole suite on the default server only (docs/ci.md).
# Usage: scripts/live-every-server.sh   Needs Redis (bash infra/redis.sh start). Exits 1 if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
export COTAL_RESULTS="${COTAL_RESULTS:-$PWD/.test-results/every-server}"
rm -rf "$COTAL_RESULTS" && mkdir -p "$COTAL_RESULTS"
mapfile -t servers < <(bash scripts/servers.sh supported) || exit 6
status=0
for bin in "${servers[@]}"; do
  bash scripts/live.sh rest "$bin" all || status=1
  bash scripts/live.sh timed "$bin" all || status=1
done
node scripts/test-summary.mjs "$COTAL_RESULTS" || status=1
exit "$status"
