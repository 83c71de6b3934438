#!/usr/bin/env bash
# README command 2: set up, then run every test: typecheck, lint, the unit suites and mutation once, then every
# live suite on the default nats-server (the newest pinned release setup built with Go) and the matrix and
# the version-dependent cells on every other supported one (Debian's 2.9.10, the other pinned releases),
# then ablation and chaos (docs/ci.md). Without Go only Debian's server runs, and it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1
# Where the time goes, phase by phase (docs/ci.md): `phase NAME` closes the previous phase and opens NAME.
phases=() phase_name="" phase_at=$SECONDS
phase() {
  [ -z "$phase_name" ] || phases+=("$(printf '| %-44s | %5d s |' "$phase_name" $((SECONDS - phase_at)))")
  phase_name="$1" phase_at=$SECONDS
}
phase "set-up (infra/setup.sh)"
bash infra/setup.sh

results="$PWD/.test-results"
rm -rf "$results" && mkdir -p "$results"

status=0
export COTAL_TEST_REPORT_DIR="$results/units"
mkdir -p "$COTAL_TEST_REPORT_DIR"
phase "typecheck, lint, cycles, units"
pnpm typecheck --output-logs=errors-only || status=1
pnpm lint --output-logs=errors-only || status=1
pnpm check:cycles || status=1   # no import circle (issue 17)
# The Go credential poller (tools/credpoll) stays gofmt-clean and vet-clean where Go is.
if command -v go >/dev/null 2>&1 && bash infra/credpoll.sh supported; then
  (cd tools/credpoll && unformatted="$(gofmt -l .)" && [ -z "$unformatted" ] && go vet .) || { echo "test.sh: tools/credpoll is not gofmt/vet clean" >&2; status=1; }
fi
pnpm test --concurrency=1 || status=1
# Mutation testing (README "Mutation testing"): the safety core's score must stay >= 90 %.
phase "mutation (incremental)"
pnpm test:mutation || status=1

# The servers (scripts/servers.sh): the default first (NATS_SERVER_BIN, else the newest release the set-up
# built), then every other supported one. Every live cell runs on the default; the matrix and every cell
# tagged `server-version` run on each of the others too (docs/ci.md, "Which cells run on which server").
mapfile -t servers < <(bash scripts/servers.sh supported)
[ "${#servers[@]}" -gt 0 ] || { echo "test.sh: no nats-server found (bash infra/setup.sh installs Debian's)" >&2; exit 6; }
command -v go >/dev/null 2>&1 || echo "test.sh: go is not on PATH, so no current nats-server was built: the live suites run on $("${servers[0]}" --version) only (README: Server versions)"
export COTAL_RESULTS="$results"

# The jobs suites need Redis: ours on loopback for the live runs, stopped on any exit.
export REDIS_PORT="${REDIS_PORT:-6379}"
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
bash infra/redis.sh start
trap 'bash infra/redis.sh stop' EXIT

server_version() { "$1" --version | sed -E 's/.*v([0-9][^ ]*).*/\1/'; }
sparse=()
scope=all
for bin in "${servers[@]}"; do
  phase "live $(server_version "$bin") ($scope): rest, then the matrix"
  bash scripts/live.sh rest "$bin" "$scope" || status=1
  if ! bash scripts/live.sh timed "$bin" "$scope"; then
    # Red only for want of a dense poll (a loaded machine proved nothing either way): once more at the
    # end, the first report kept under superseded/ (docs/saga.md, "The race/crash matrix").
    if node scripts/inconclusive-only.mjs "$results/live-$(server_version "$bin")/live-timed.json"; then sparse+=("$bin"); else status=1; fi
  fi
  scope=versioned
done

# Ablation (docs/ablation.md): every guard switched off must turn its live cell red; each row on the first
# of these servers its range admits (the default, unless the guard bites only on an older server).
phase "ablation"
COTAL_TEST_REPORT_DIR="$results" COTAL_ABLATE_SERVERS="$(printf '%s\n' "${servers[@]}")" bash scripts/ablate.sh || status=1

# Chaos, short form (test-live/chaos/README.md): random SIGKILLs during every verb, recovery by the
# printed next: lines only. A fixed seed keeps CI reproducible; `scripts/chaos.sh 30` is the full run.
phase "chaos"
CHAOS_SEED="${CHAOS_SEED:-2026}" NATS_SERVER_BIN="${servers[0]}" bash scripts/chaos.sh 2 || status=1

[ "${#sparse[@]}" -eq 0 ] || phase "sparse matrices, again"
for bin in "${sparse[@]}"; do
  v="$(server_version "$bin")"
  echo "test.sh: the matrix on nats-server $v had only inconclusive (sparse-poll) cells; running it again"
  mkdir -p "$results/superseded/live-$v" && mv "$results/live-$v/live-timed.json" "$results/superseded/live-$v/"
  scope=versioned
  [ "$bin" != "${servers[0]}" ] || scope=all
  bash scripts/live.sh timed "$bin" "$scope" || status=1
done

phase "summary"
node scripts/test-summary.mjs "$results" --floor .ci/cells-floor || status=1
phase ""
printf '\n| phase | time |\n|---|---|\n'
printf '%s\n' "${phases[@]}"
printf '| %-44s | %5d s |\n' "total" "$SECONDS"
exit "$status"
