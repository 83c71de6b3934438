#!/usr/bin/env bash
# Puts `cotal` on PATH: links packages/cli's bin (package.json "bin") into the first directory of
# /usr/local/bin, ~/.local/bin that this user can write and PATH holds; also natscli's `nats` when no
# `nats` is on PATH and the set-up built one. Idempotent. Prints where, or why not.
set -euo pipefail
cd "$(dirname "$0")/.."
cli="$PWD/packages/cli/dist/bundle/cotal.js"
[ -x "$cli" ] || chmod +x "$cli"
on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac; }
dir=""
for d in /usr/local/bin "$HOME/.local/bin"; do
  if on_path "$d" && mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then dir="$d"; break; fi
done
if [ -z "$dir" ]; then
  echo "install-cli: no writable directory on PATH (/usr/local/bin, ~/.local/bin); run: export PATH=\"$HOME/.local/bin:\$PATH\" && bash infra/install-cli.sh" >&2
  exit 0
fi
ln -sfn "$cli" "$dir/cotal"
if ! command -v nats >/dev/null 2>&1 || [[ "$(readlink "$dir/nats" 2>/dev/null)" == "$PWD/.tools/"* ]]; then
  if nats_bin="$(bash infra/nats-server.sh cli-path 2>/dev/null)" && [ -x "$nats_bin" ]; then ln -sfn "$nats_bin" "$dir/nats"; fi
fi
[ -n "${QUIET:-}" ] || echo "install-cli: $(command -v cotal) → $cli ($(cotal --version))" >&2
