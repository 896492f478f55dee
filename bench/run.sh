#!/usr/bin/env bash
# `npm run bench`: builds dist/ (the benchmark runs `vpn-portal serve` from it), starts a
# throw-away PostgreSQL server as the tests do (unless TEST_POSTGRES_URL names one), and
# measures on SQLite and on PostgreSQL (bench/run.ts, then the searches: bench/search.ts).
# BENCH_DATABASES="sqlite" skips PostgreSQL; BENCH_ONLY=search runs the searches alone,
# BENCH_ONLY=relay the ProxyGuard relay under a flood of slow clients alone (bench/relay-flood.ts),
# BENCH_ONLY=hung the Admin API while a node hangs alone (bench/hung-node.ts),
# BENCH_ONLY=nat deterministic NAT for a /16 loaded into nftables alone (bench/deterministic-nat.ts),
# BENCH_ONLY=eduvpn the import of 100,000 eduVPN configurations alone (bench/eduvpn-import.ts),
# BENCH_ONLY=listings the portal's heap while it reconciles six full wireguard-go nodes and answers
# connection_list and connected_users beside (bench/listing-heap.ts),
# BENCH_ONLY=million a million configurations on PostgreSQL alone (bench/million.ts; not part of the
# whole run: it loads the machine for some twenty minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=test/support/throwaway-postgres.sh
source test/support/throwaway-postgres.sh
if [[ "${BENCH_ONLY:-}" == relay ]]; then
  node --import tsx bench/relay-flood.ts
  exit 0
fi
if [[ "${BENCH_ONLY:-}" == hung ]]; then
  node --import tsx bench/hung-node.ts
  exit 0
fi
if [[ "${BENCH_ONLY:-}" == nat ]]; then
  node --import tsx bench/deterministic-nat.ts
  exit 0
fi
if [[ "${BENCH_ONLY:-}" == eduvpn ]]; then
  if [[ " ${BENCH_DATABASES:-sqlite postgres} " == *" postgres "* ]]; then
    start_throwaway_postgres
  fi
  node --import tsx bench/eduvpn-import.ts
  exit 0
fi
npm run --silent build
if [[ "${BENCH_ONLY:-}" == listings ]]; then
  node --import tsx bench/listing-heap.ts
  exit 0
fi
if [[ "${BENCH_ONLY:-}" == million ]]; then
  start_throwaway_postgres
  node --import tsx bench/million.ts
  exit 0
fi
if [[ " ${BENCH_DATABASES:-sqlite postgres} " == *" postgres "* ]]; then
  start_throwaway_postgres
fi
if [[ "${BENCH_ONLY:-}" != search ]]; then
  node --import tsx bench/run.ts
fi
node --import tsx bench/search.ts
if [[ "${BENCH_ONLY:-}" != search ]]; then
  node --import tsx bench/relay-flood.ts
  node --import tsx bench/hung-node.ts
  node --import tsx bench/deterministic-nat.ts
  node --import tsx bench/eduvpn-import.ts
fi
