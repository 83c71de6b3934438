#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine with Node 20 and npm: system packages, pnpm, deps, build.
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo's telemetry (and its first-run notice) stays off in cotal's scripts.
export TURBO_TELEMETRY_DISABLED=1

PNPM_VERSION=12.4.2
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
if [ -z "${NATS_SERVER_BIN:-}" ] && ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/bin/nats-server ]; then missing+=(nats-server); fi
if ! command -v redis-server >/dev/null 2>&1; then missing+=(redis-server); fi
# Debian's Chromium drives the dashboard's browser test (playwright-core never downloads a browser).
if [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
# A Compose client validates infra/docker/compose.yml (`config` needs no engine); Debian's is 1.29.
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then missing+=(docker-compose); fi
# openssl makes a cluster root's route CA and certificates (docs/cluster.md); ip (iproute2) the simulated
# hosts (infra/hosts.sh); systemd-analyze checks the units (infra/systemd; systemd-analyze verify).
if ! command -v openssl >/dev/null 2>&1; then missing+=(openssl); fi
if ! command -v ip >/dev/null 2>&1; then missing+=(iproute2); fi
if ! command -v systemd-analyze >/dev/null 2>&1; then missing+=(systemd); fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]} from Debian" >&2
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm@$PNPM_VERSION" >&2
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null
fi

pnpm install --frozen-lockfile --reporter=silent
pnpm build --output-logs=errors-only

# The independent test client (nats-py; test-live/fixtures/app_client.py), pinned, in its own venv under .tools.
NATS_PY=2.9.0 NKEYS_PY=0.2.1
if [ ! -x .tools/py/bin/python ] || ! .tools/py/bin/python -c "import importlib.metadata as m; assert m.version('nats-py') == '$NATS_PY' and m.version('nkeys') == '$NKEYS_PY'" 2>/dev/null; then
  echo "setup: installing nats-py $NATS_PY and nkeys $NKEYS_PY into .tools/py" >&2
  python3 -m venv .tools/py && .tools/py/bin/pip install -q "nats-py==$NATS_PY" "nkeys==$NKEYS_PY" >/dev/null
fi

# Current nats-server releases (and the nats CLI) beside Debian's, when Go can build them (README: Server versions).
# A failed build is reported, not fatal: the rest of the set-up (and Debian's server) still works.
if command -v go >/dev/null 2>&1; then
  QUIET=1 bash infra/nats-server.sh install || echo "setup: building the pinned nats-server releases failed (above); only Debian's nats-server is usable" >&2
  QUIET=1 bash infra/credpoll.sh install || echo "setup: building the Go credential poller failed (above); the harness polls from Node" >&2
  QUIET=1 bash infra/nsc.sh install || echo "setup: building nsc failed (above); the onboarding bench skips its nsc arm" >&2
fi

# `cotal` (and natscli's `nats`, when none is installed) on PATH, the way `npm install -g` puts a
# package's bin there: a link to this checkout's built CLI, so a rebuild is what runs (docs/development.md).
bash infra/install-cli.sh
