#!/usr/bin/env bash
# README command 1: set up, then run a local broker under ./.cotal with a first space, detached.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/setup.sh
exec node packages/cli/dist/bundle/cotal.js up --detach "$@"
