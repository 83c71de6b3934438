#!/usr/bin/env bash
# README command 2: set up, then run every test: typecheck, lint and the unit suites once, then every
# live suite (the matrix included) on Debian's nats-server and on each pinned current release
# (infra/nats-server.sh; built with Go by setup). Without Go only Debian's server runs, and it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1
bash infra/setup.sh

results="$PWD/.test-results"
rm -rf "$results" && mkdir -p "$results"

status=0
export COTAL_TEST_REPORT_DIR="$results/units"
mkdir -p "$COTAL_TEST_REPORT_DIR"
pnpm typecheck --output-logs=errors-only || status=1
pnpm lint --output-logs=errors-only || status=1
pnpm check:cycles || status=1   # no import circle (issue 17)
# The Go credential poller (tools/credpoll) stays gofmt-clean and vet-clean where Go is.
if command -v go >/dev/null 2>&1 && bash infra/credpoll.sh supported; then
  (cd tools/credpoll && unformatted="$(gofmt -l .)" && [ -z "$unformatted" ] && go vet .) || { echo "test.sh: tools/credpoll is not gofmt/vet clean" >&2; status=1; }
fi
pnpm test --concurrency=1 || status=1
# Mutation testing (README "Mutation testing"): the safety core's score must stay >= 90 %.
pnpm test:mutation || status=1

# The servers the live suites run on: NATS_SERVER_BIN (else Debian's 2.9.10), then every pinned release.
base="${NATS_SERVER_BIN:-}"
if [ -z "$base" ]; then
  for c in /usr/bin/nats-server /usr/sbin/nats-server "$(command -v nats-server || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then base="$c"; break; fi
  done
fi
[ -n "$base" ] || { echo "test.sh: no nats-server found (bash infra/setup.sh installs Debian's)" >&2; exit 6; }
servers=("$base")
if command -v go >/dev/null 2>&1; then
  for v in $(bash infra/nats-server.sh pinned); do
    bin="$(bash infra/nats-server.sh path "$v")" || { status=1; continue; }
    [ "$(realpath "$bin")" = "$(realpath "$base")" ] || servers+=("$bin")
  done
else
  echo "test.sh: go is not on PATH, so no current nats-server was built: the live suites run on $("$base" --version) only (README: Server versions)"
fi

# The jobs suites need Redis: ours on loopback for the live runs, stopped on any exit.
export REDIS_PORT="${REDIS_PORT:-6379}"
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
bash infra/redis.sh start
trap 'bash infra/redis.sh stop' EXIT

# `nats-server --version` prints "nats-server: v2.9.10".
server_version() { "$1" --version | sed -E 's/.*v([0-9][^ ]*).*/\1/'; }
# One part of the live suites (rest: every other suite two files at a time; timed: the matrix alone, its
# poll-rate floor needs the cores; test-live/vitest.config.ts) on server $2, reports in live-<version>.
live_part() {
  local dir="$results/live-$(server_version "$2")"
  mkdir -p "$dir"
  COTAL_LIVE_PART="$1" COTAL_TEST_REPORT_DIR="$dir" COTAL_MATRIX_DIR="$dir/matrix" NATS_SERVER_BIN="$2" pnpm test:live
}

sparse=()
for bin in "${servers[@]}"; do
  echo "test.sh: live suites on nats-server $(server_version "$bin") ($bin)"
  live_part rest "$bin" || status=1
  if ! live_part timed "$bin"; then
    # Red only for want of a dense poll (a loaded machine proved nothing either way): once more at the
    # end, the first report kept under superseded/ (docs/saga.md, "The race/crash matrix").
    if node scripts/inconclusive-only.mjs "$results/live-$(server_version "$bin")/live-timed.json"; then sparse+=("$bin"); else status=1; fi
  fi
done

# Ablation (docs/ablation.md): every guard switched off must turn its live cell red; on Debian's server,
# and the evictor rows (KICK needs 2.10+) on the first current release.
COTAL_TEST_REPORT_DIR="$results" NATS_SERVER_BIN="$base" bash scripts/ablate.sh || status=1
if [ "${#servers[@]}" -gt 1 ]; then
  COTAL_TEST_REPORT_DIR="$results/current" NATS_SERVER_BIN="${servers[1]}" bash scripts/ablate.sh NO_EVICT EVICT_FIRST_NODE_ONLY || status=1
fi

# Chaos, short form (test-live/chaos/README.md): random SIGKILLs during every verb, recovery by the
# printed next: lines only. A fixed seed keeps CI reproducible; `scripts/chaos.sh 30` is the full run.
CHAOS_SEED="${CHAOS_SEED:-2026}" NATS_SERVER_BIN="$base" bash scripts/chaos.sh 2 || status=1

for bin in "${sparse[@]}"; do
  v="$(server_version "$bin")"
  echo "test.sh: the matrix on nats-server $v had only inconclusive (sparse-poll) cells; running it again"
  mkdir -p "$results/superseded/live-$v" && mv "$results/live-$v/live-timed.json" "$results/superseded/live-$v/"
  live_part timed "$bin" || status=1
done

node scripts/test-summary.mjs "$results" || status=1
exit "$status"
