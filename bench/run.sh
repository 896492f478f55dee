#!/usr/bin/env bash
# `npm run bench`: builds dist/ (the benchmark runs `vpn-portal serve` from it), starts a
# throw-away PostgreSQL server as the tests do (unless TEST_POSTGRES_URL names one), and
# measures on SQLite and on PostgreSQL (bench/run.ts). BENCH_DATABASES="sqlite" skips PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=test/support/throwaway-postgres.sh
source test/support/throwaway-postgres.sh
npm run --silent build
if [[ " ${BENCH_DATABASES:-sqlite postgres} " == *" postgres "* ]]; then
  start_throwaway_postgres
fi
node --import tsx bench/run.ts
