#!/usr/bin/env bash
# Chaos: per verb (add rm reconcile rotate-sys cut backup backup-online backup-quiesce restore restore-online
# restore-replace revoke rotate-key), SIGKILL cotal or nats-server at a
# random moment of the verb's measured duration, recover by following only the printed `next:` lines,
# and assert the root converged (test-live/chaos/README.md). Deterministic with CHAOS_SEED.
# Usage: scripts/chaos.sh [runs per verb, default 3] [verb…]   Exits 1 on any failed run.
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1
[ -f packages/cli/dist/bundle/cotal.js ] || pnpm build --output-logs=errors-only
npx tsc -p test-live/chaos/tsconfig.json
exec node test-live/chaos/dist/main.js "$@"
