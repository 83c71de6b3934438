#!/usr/bin/env bash
# Proves each isolation guard's cell goes red: runs the live isolation suite once per test-only
# switch (set for the whole run, so the CLI mints with it too) and checks that the cell the guard is
# named after failed. Exit 0 only when every switch turned its cell red. NATS_SERVER_BIN picks the server.
set -uo pipefail
cd "$(dirname "$0")/.."
out="test-live/reports/isolation-ablation-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
version="$("${NATS_SERVER_BIN:-/usr/bin/nats-server}" --version 2>/dev/null | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -1)"
declare -A cells=(
  [COTAL_TEST_UNSAFE_WIDE_OBSERVER_INBOX]="isolation: \$SYS about B, authority, others' replies"
  [COTAL_TEST_UNSAFE_WIDE_OBSERVER_REQUESTS]="isolation: \$SYS about B, authority, others' replies"
  [COTAL_TEST_UNSAFE_UNRESTRICTED_USER]="least privilege: default user vs admin"
  [COTAL_TEST_UNSAFE_NO_EVICT]="evictor: cuts B, spares A"
)
status=0
for sw in "${!cells[@]}"; do
  cell="${cells[$sw]}"
  if [[ "$sw" == COTAL_TEST_UNSAFE_NO_EVICT && "$version" == 2.9.* ]]; then
    echo "skip  $sw: nats-server $version has no KICK, so there is no eviction to switch off"
    continue
  fi
  env "$sw=1" COTAL_MATRIX_DIR="$PWD/$out/$sw" pnpm --filter @cotal/test-live exec vitest run suites/isolation.test.ts >"$out/$sw.log" 2>&1
  result="$(node -e '
    const fs = require("fs"), path = require("path");
    const [dir, name] = process.argv.slice(1);
    const cells = path.join(dir, "cells");
    const hit = fs.existsSync(cells) ? fs.readdirSync(cells).map((f) => JSON.parse(fs.readFileSync(path.join(cells, f), "utf8"))).find((c) => c.cell === name) : undefined;
    process.stdout.write(hit ? hit.result : "missing");
  ' "$out/$sw" "$cell")"
  if [[ "$result" == fail ]]; then echo "red   $sw: \"$cell\" failed, as it must"; else echo "GREEN $sw: \"$cell\" was $result with the guard off"; status=1; fi
done
exit $status
