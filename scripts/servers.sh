#!/usr/bin/env bash
# The nats-servers the tests run on (docs/ci.md, "Which cells run on which server").
#   scripts/servers.sh default     the server cotal itself picks: NATS_SERVER_BIN, else the newest release
#                                  the set-up built, else Debian's (asked of @cotal/core: one home for the rule)
#   scripts/servers.sh supported   every supported server installed here, one path a line, the default
#                                  first, then Debian's and each pinned release (infra/nats-server.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

default_server() {
  node --input-type=module -e '
    const { natsServerBinary } = await import("./packages/core/dist/entries/server-process.js");
    try { console.log(natsServerBinary()); } catch (e) { console.error(`servers.sh: ${e.message}`); process.exit(6); }'
}

case "${1:-}" in
  default) default_server ;;
  supported)
    seen=()
    add() {
      local real
      [ -n "$1" ] && [ -x "$1" ] || return 0
      real="$(realpath "$1")"
      for s in "${seen[@]}"; do [ "$s" != "$real" ] || return 0; done
      seen+=("$real")
      echo "$1"
    }
    d="$(default_server)"
    add "$d"
    for c in /usr/bin/nats-server /usr/sbin/nats-server; do add "$c"; done
    for v in $(bash infra/nats-server.sh pinned); do add "$(bash infra/nats-server.sh path "$v" 2>/dev/null || true)"; done
    ;;
  *) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
