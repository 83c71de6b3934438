#!/usr/bin/env bash
# Runs the README's quick tour exactly as written: the ```sh blocks under its "## Quick tour" heading,
# in order, as one `bash -euo pipefail` script started from /, with COTAL_ROOT set to --root. The README
# is the only copy of the commands, so the two cannot drift (test-live/suites/quick-tour.test.ts runs it).
#
#   bash scripts/quick-tour.sh --root DIR [--readme FILE]   # run it; DIR's parent gets the tour's files
#   bash scripts/quick-tour.sh --print                      # print the extracted script, run nothing
#
# `cotal` and `nats` are the commands the tour calls. Where they are not on PATH yet, this script puts
# the repository's built CLI and the natscli the set-up built (infra/nats-server.sh cli-path) on PATH
# for the run only, and says so. The tour leaves its broker running: `COTAL_ROOT=DIR cotal down`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
readme="$repo/README.md" root="" print=0
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="${2:?--root needs a directory}"; shift 2 ;;
    --readme) readme="${2:?--readme needs a file}"; shift 2 ;;
    --print) print=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quick-tour.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The fenced sh blocks between "## Quick tour" and the next level-2 heading.
tour="$(awk '
  /^## / { inside = ($0 ~ /^## Quick tour[[:space:]]*$/); next }
  inside && /^```sh[[:space:]]*$/ { fenced = 1; next }
  inside && fenced && /^```[[:space:]]*$/ { fenced = 0; print ""; next }
  inside && fenced { print }
' "$readme")"
[ -n "$tour" ] || { echo "quick-tour.sh: no \`\`\`sh block under \"## Quick tour\" in $readme" >&2; exit 3; }
if [ "$print" = 1 ]; then printf '%s\n' "$tour"; exit 0; fi
[ -n "$root" ] || { echo "quick-tour.sh: --root DIR is required (the tour's own cotal root)" >&2; exit 2; }
case "$root" in /*) ;; *) root="$PWD/$root" ;; esac

work="$(mktemp -d "${TMPDIR:-/tmp}/cotal-quick-tour.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
if ! command -v cotal >/dev/null 2>&1; then
  printf '#!/bin/sh\nexec node %q "$@"\n' "$repo/packages/cli/dist/bundle/cotal.js" > "$work/bin/cotal"
  chmod +x "$work/bin/cotal"
  echo "quick-tour.sh: cotal is not on PATH; using $repo/packages/cli/dist/bundle/cotal.js" >&2
fi
if ! command -v nats >/dev/null 2>&1; then
  nats_cli="$(bash "$repo/infra/nats-server.sh" cli-path)"
  [ -x "$nats_cli" ] || { echo "quick-tour.sh: no nats CLI (bash infra/nats-server.sh install builds it)" >&2; exit 6; }
  ln -s "$nats_cli" "$work/bin/nats"
  echo "quick-tour.sh: nats is not on PATH; using $nats_cli" >&2
fi
printf '%s\n' "$tour" > "$work/tour.sh"

cd /
PATH="$work/bin:$PATH" COTAL_ROOT="$root" bash -xeuo pipefail "$work/tour.sh"
