#!/usr/bin/env bash
# `bash bench/devices.sh`: GET /devices at 100,000 devices (bench/devices.ts), on SQLite and on a
# throw-away PostgreSQL server (unless TEST_POSTGRES_URL names one). BENCH_DATABASES="sqlite" skips PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=test/support/throwaway-postgres.sh
source test/support/throwaway-postgres.sh
if [[ " ${BENCH_DATABASES:-sqlite postgres} " == *" postgres "* ]]; then
  start_throwaway_postgres
fi
node --import tsx bench/devices.ts
