#!/usr/bin/env bash
# nsc, the operator tool for JWT-mode NATS (the `nsc` arm of the onboarding bench, issue 35), built from its
# Go module into .tools/nsc/VERSION/nsc.
#   infra/nsc.sh install   build the pinned version when missing (idempotent: a binary that reports it is kept)
#   infra/nsc.sh path      print the binary's path (exit 1 when not installed)
# Built inside a throwaway module that names nsc as a tool (`go get -tool`), not by `go install
# MODULE@VERSION`: the module proxy serves nsc's exact versions but refuses its version list, which
# `go install` reads to check for deprecation, so that command fails with 403 Forbidden.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NSC_VERSION=2.15.0
BIN="$ROOT/.tools/nsc/$NSC_VERSION/nsc"

has() { [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -Eq "(^|[^0-9.])$NSC_VERSION([^0-9.]|$)"; }

install() {
  if has; then [ -n "${QUIET:-}" ] || echo "nsc $NSC_VERSION: $BIN (already installed)"; return 0; fi
  command -v go >/dev/null 2>&1 || { echo "nsc.sh: go is not on PATH; the bench's nsc arm is skipped without it" >&2; return 3; }
  echo "nsc $NSC_VERSION: building github.com/nats-io/nsc/v2@v$NSC_VERSION" >&2
  mkdir -p "$(dirname "$BIN")"
  local tmp
  tmp="$(mktemp -d "$(dirname "$BIN")/.build.XXXXXX")"
  # A failed build leaves no binary behind: built aside, then renamed into place.
  if ! (cd "$tmp" && go mod init cotal-nsc-build >/dev/null 2>&1 && go get -tool "github.com/nats-io/nsc/v2@v$NSC_VERSION" >/dev/null 2>&1 \
    && go build -trimpath -ldflags "-X main.version=$NSC_VERSION" -o "$tmp/nsc" github.com/nats-io/nsc/v2); then
    rm -rf "$tmp"
    echo "nsc.sh: building github.com/nats-io/nsc/v2@v$NSC_VERSION failed" >&2
    return 1
  fi
  mv -f "$tmp/nsc" "$BIN"
  rm -rf "$tmp"
  has || { echo "nsc.sh: $BIN does not report $NSC_VERSION" >&2; return 1; }
  [ -n "${QUIET:-}" ] || echo "nsc $NSC_VERSION: $BIN"
}

case "${1:-}" in
  install) install ;;
  path)
    has || { echo "nsc.sh: nsc $NSC_VERSION is not installed; run: bash infra/nsc.sh install" >&2; exit 1; }
    echo "$BIN"
    ;;
  *) sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
