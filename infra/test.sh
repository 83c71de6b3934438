#!/usr/bin/env bash
# README command 2: set up, then run every test (units, then live suites against real servers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh

export COTAL_TEST_REPORT_DIR="$PWD/.test-results"
rm -rf "$COTAL_TEST_REPORT_DIR" && mkdir -p "$COTAL_TEST_REPORT_DIR"

status=0
pnpm typecheck --output-logs=errors-only || status=1
pnpm lint --output-logs=errors-only || status=1
pnpm test --concurrency=1 || status=1
# The jobs suites need Redis: ours on loopback for the live run, stopped on any exit.
export REDIS_PORT="${REDIS_PORT:-6379}"
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
bash infra/redis.sh start
trap 'bash infra/redis.sh stop' EXIT
pnpm test:live || status=1
# Ablation: every guard switched off must turn its live cell red (scripts/ablate.sh, docs/ablation.md).
bash scripts/ablate.sh || status=1
node scripts/test-summary.mjs "$COTAL_TEST_REPORT_DIR" || status=1
exit "$status"
