#!/usr/bin/env bash
# Runs the whole test suite: unit and HTTP tests, then the end-to-end tests in network
# namespaces (these need root, wireguard-go, wg, ip, ping and nft; .ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "test/run.sh: the end-to-end tests create network namespaces and must run as root" >&2
  exit 1
fi
shopt -s nullglob
tests=(test/*.test.ts test/e2e/*.test.ts)
exec node --import tsx --test --test-concurrency=2 --test-reporter=spec "${tests[@]}"
