#!/usr/bin/env bash
# Pinned current nats-server releases (and the nats CLI), built from their Go modules into .tools/.
#   infra/nats-server.sh install [VERSION]…   build each VERSION (default: the pinned list) and the CLI
#   infra/nats-server.sh path VERSION         print the binary's path (exit 1 when not installed)
#   infra/nats-server.sh cli-path             print the nats CLI's path (exit 1 when not installed)
#   infra/nats-server.sh pinned               print the pinned versions, one a line
# Idempotent: a binary whose `--version` already names its version is left alone.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"

# The newest 2.14 and 2.15 the module proxy serves (`go list -m -versions github.com/nats-io/nats-server/v2`).
PINNED=(2.14.10 2.15.3)
NATSCLI_VERSION=0.5.0

usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

server_path() { echo "$TOOLS/nats-server/$1/nats-server"; }
cli_path() { echo "$TOOLS/nats/$NATSCLI_VERSION/nats"; }

# has BIN VERSION: the binary exists and reports exactly vVERSION.
has() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -Eq "(^|[^0-9.])v$2([^0-9.]|$)"; }

# build MODULE@VERSION into DIR/NAME through a temp GOBIN, so a failed build never leaves a binary behind.
build() {
  local module=$1 version=$2 dir=$3 name=$4 tmp
  command -v go >/dev/null 2>&1 || { echo "nats-server.sh: go is not on PATH; install Go or set NATS_SERVER_BIN (README: Server versions)" >&2; return 3; }
  mkdir -p "$dir"
  tmp="$(mktemp -d "$dir/.build.XXXXXX")"
  if ! GOBIN="$tmp" go install "$module@v$version"; then rm -rf "$tmp"; echo "nats-server.sh: building $module@v$version failed" >&2; return 1; fi
  mv -f "$tmp/$name" "$dir/$name"
  rm -rf "$tmp"
}

install_server() {
  local v=$1 bin
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "nats-server.sh: not a version: $v" >&2; return 2; }
  bin="$(server_path "$v")"
  if has "$bin" "$v"; then [ -n "${QUIET:-}" ] || echo "nats-server $v: $bin (already installed)"; return 0; fi
  echo "nats-server $v: building github.com/nats-io/nats-server/v2@v$v" >&2
  build github.com/nats-io/nats-server/v2 "$v" "$(dirname "$bin")" nats-server
  has "$bin" "$v" || { echo "nats-server.sh: $bin does not report v$v" >&2; return 1; }
  [ -n "${QUIET:-}" ] || echo "nats-server $v: $bin"
}

install_cli() {
  local bin
  bin="$(cli_path)"
  if has "$bin" "$NATSCLI_VERSION"; then [ -n "${QUIET:-}" ] || echo "nats CLI $NATSCLI_VERSION: $bin (already installed)"; return 0; fi
  echo "nats CLI $NATSCLI_VERSION: building github.com/nats-io/natscli/nats@v$NATSCLI_VERSION" >&2
  build github.com/nats-io/natscli/nats "$NATSCLI_VERSION" "$(dirname "$bin")" nats
  [ -n "${QUIET:-}" ] || echo "nats CLI $NATSCLI_VERSION: $bin"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  install)
    versions=("$@")
    [ ${#versions[@]} -gt 0 ] || versions=("${PINNED[@]}")
    for v in "${versions[@]}"; do install_server "$v"; done
    install_cli
    ;;
  path)
    [ $# -eq 1 ] || usage
    bin="$(server_path "$1")"
    has "$bin" "$1" || { echo "nats-server.sh: nats-server $1 is not installed; run: infra/nats-server.sh install $1" >&2; exit 1; }
    echo "$bin"
    ;;
  cli-path)
    bin="$(cli_path)"
    has "$bin" "$NATSCLI_VERSION" || { echo "nats-server.sh: the nats CLI is not installed; run: infra/nats-server.sh install" >&2; exit 1; }
    echo "$bin"
    ;;
  pinned) printf '%s\n' "${PINNED[@]}" ;;
  *) usage ;;
esac
