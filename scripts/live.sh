#!/usr/bin/env bash
# One part of the live suites on one nats-server (test-live/vitest.config.ts):
#   scripts/live.sh rest|timed SERVER [all|versioned]
# rest: every suite but the matrix, two files at a time; timed: the matrix alone (its poll must stay dense).
# versioned: only the cells tagged `server-version` (docs/ci.md). Reports go to
# $COTAL_RESULTS/live-<version>/ (default .test-results), one report per part.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] && [[ "$1" =~ ^(rest|timed)$ ]] && [[ "${3:-all}" =~ ^(all|versioned)$ ]] || { sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
part="$1" bin="$2" scope="${3:-all}"
# `nats-server --version` prints "nats-server: v2.9.10".
version="$("$bin" --version | sed -E 's/.*v([0-9][^ ]*).*/\1/')"
dir="${COTAL_RESULTS:-$PWD/.test-results}/live-$version"
mkdir -p "$dir"
echo "live.sh: $part ($scope) on nats-server $version ($bin)"
COTAL_LIVE_PART="$part" COTAL_LIVE_SCOPE="$scope" COTAL_TEST_REPORT_DIR="$dir" COTAL_MATRIX_DIR="$dir/matrix" NATS_SERVER_BIN="$bin" pnpm test:live
