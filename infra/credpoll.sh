#!/usr/bin/env bash
# The credential poller's Go attempt loops (tools/credpoll; docs/saga.md, the race/crash matrix).
#   infra/credpoll.sh install   build .tools/credpoll/credpoll when missing or older than its sources
#   infra/credpoll.sh path      print the binary's path (exit 1 when not built)
#   infra/credpoll.sh supported exit 0 on the platforms it builds for (Linux amd64/arm64: its clock)
# Standard library only, so the build needs no module download. Elsewhere, or without Go, the harness
# polls from Node.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/tools/credpoll"
BIN="$ROOT/.tools/credpoll/credpoll"

supported() { [ "$(uname -s)" = Linux ] && case "$(uname -m)" in x86_64 | aarch64 | arm64) true ;; *) false ;; esac; }
fresh() { [ -x "$BIN" ] && [ -z "$(find "$SRC" -newer "$BIN" -type f -print -quit)" ]; }

case "${1:-}" in
  install)
    supported || { [ -n "${QUIET:-}" ] || echo "credpoll: not built on $(uname -sm) (Linux amd64/arm64 only); the poller runs in Node"; exit 0; }
    if fresh; then [ -n "${QUIET:-}" ] || echo "credpoll: $BIN (up to date)"; exit 0; fi
    command -v go >/dev/null 2>&1 || { echo "credpoll.sh: go is not on PATH; the poller falls back to Node (README: Tests)" >&2; exit 3; }
    mkdir -p "$(dirname "$BIN")"
    tmp="$(mktemp "$BIN.XXXXXX")"
    # A failed build leaves no binary behind: it is built aside and renamed into place.
    if ! (cd "$SRC" && GOFLAGS=-mod=mod go build -trimpath -o "$tmp" .); then rm -f "$tmp"; echo "credpoll.sh: building $SRC failed" >&2; exit 1; fi
    mv -f "$tmp" "$BIN"
    [ -n "${QUIET:-}" ] || echo "credpoll: $BIN"
    ;;
  path)
    fresh || { echo "credpoll.sh: $BIN is missing or older than tools/credpoll; run: bash infra/credpoll.sh install" >&2; exit 1; }
    echo "$BIN"
    ;;
  supported) supported ;;
  *) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
