#!/usr/bin/env bash
# Runs the whole test suite on SQLite and on PostgreSQL, the two passes side by side: unit and
# HTTP tests, and end-to-end tests in network namespaces (these need root, wireguard-go, wg, ip,
# ping and nft; .ci/run installs them). The PostgreSQL pass runs the files that can reach a
# database (test/support/database-files.ts); the others give the same answers on both, and run
# on the SQLite pass only.
#
# For the PostgreSQL pass a throw-away server is started on loopback with a fresh data
# directory, stopped and deleted on exit (test/support/throwaway-postgres.sh; Debian's
# `postgresql` package provides the binaries). Every test portal then gets a database of its
# own on it (TEST_DATABASE_URL). test/**/postgres-*.test.ts are about PostgreSQL itself (several
# portal instances on one database, db copy) and run on the PostgreSQL pass only.
#
#   TEST_DATABASES="sqlite" bash test/run.sh     one pass only ("sqlite", "postgres", or both: the default)
#   TEST_PASSES=serial / TEST_PASSES=together     both passes one after the other / side by side
#                                                 (default: side by side, but serial under CI=true, where a
#                                                 timing flake of a loaded machine would cost a whole run)
#   TEST_CONCURRENCY=N                            test processes at a time in each pass (default: 3)
#   TEST_POSTGRES_URL=postgres://…/postgres      use that server instead of starting one
#   bash test/run.sh test/docs/links.test.ts …   these files only
#   TEST_COVERAGE=0 / TEST_COVERAGE=1            coverage off / on (default: on for the whole suite only)
#   TEST_CPU_REPORT=FILE                          per test file: wall time and CPU time (its own and its
#                                                 processes'), written to FILE; the costliest printed at the end
#   TEST_QUICK=1                                  the edit-test loop (`npm run test:quick`): SQLite only,
#                                                 no coverage, without the tests that start VPN nodes, namespaces,
#                                                 commands or a browser (test/e2e, test/agent, test/cli,
#                                                 the console's browser tests, the slow-client floods)
#
# Coverage: every test process of both passes writes V8 coverage into coverage/tmp (not the
# processes the tests start: test/support/coverage-scope.mjs); after the last pass c8 merges it into one report of
# src/ (coverage/index.html, a summary printed), and the floors CONTRIBUTING.md gives src/core/
# and src/storage/ are checked when the whole suite ran on both databases.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "test/run.sh: the end-to-end tests create network namespaces and must run as root" >&2
  exit 1
fi
# The slow-client tests hold some 2,500 sockets in one test process (Node raises its soft
# file limit to the hard one by itself); root may raise a low hard limit.
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 8192 ]; then
  ulimit -n 8192
fi
# shellcheck source=test/support/throwaway-postgres.sh
source test/support/throwaway-postgres.sh

shopt -s nullglob globstar
if [ "$#" -gt 0 ]; then
  files=("$@")
else
  files=(test/**/*.test.ts)
fi
if [ "${TEST_QUICK:-0}" = 1 ]; then
  quick=()
  for file in "${files[@]}"; do
    [[ "$file" =~ ^test/(e2e|agent|cli)/ || "$file" == *slow-clients* ]] && continue
    grep -q 'support/console-browser' "$file" || quick+=("$file")
  done
  files=("${quick[@]}")
  export TEST_DATABASES=sqlite TEST_COVERAGE=0
fi
read -r -a databases <<<"${TEST_DATABASES:-sqlite postgres}"
if [ "$#" -gt 0 ]; then coverage="${TEST_COVERAGE:-0}"; else coverage="${TEST_COVERAGE:-1}"; fi
if [ "$coverage" = 1 ]; then
  rm -rf coverage
  mkdir -p coverage/tmp
  export NODE_V8_COVERAGE="$PWD/coverage/tmp"
  preloads=(--import ./test/support/coverage-scope.mjs)
else
  preloads=()
fi
# TEST_CPU_REPORT=FILE: which files cost the run most (test/support/cpu-report.mjs), printed at the end.
if [ -n "${TEST_CPU_REPORT:-}" ]; then
  : >"$TEST_CPU_REPORT"
  TEST_CPU_REPORT=$(realpath "$TEST_CPU_REPORT")
  export TEST_CPU_REPORT
  preloads+=(--import ./test/support/cpu-report.mjs)
fi

for database in "${databases[@]}"; do
  case "$database" in
    sqlite) ;;
    postgres)
      start_throwaway_postgres
      # Test portals get copies of one database the migrations filled (migrated-databases.ts).
      TEST_POSTGRES_TEMPLATE=$(node --import tsx test/support/migrated-databases.ts create "$TEST_POSTGRES_URL")
      export TEST_POSTGRES_TEMPLATE
      ;;
    *) echo "test/run.sh: TEST_DATABASES takes sqlite and/or postgres, not \"$database\"" >&2; exit 2 ;;
  esac
done

# The passes run side by side (TEST_PASSES=serial, and by default under CI=true: one after the
# other), each with three test processes at a time (TEST_CONCURRENCY). Much of a test's time is
# spent waiting (for a node, a handshake, a refresh), not computing: measured, a pass alone with
# three processes at a time kept one and a half cores of two busy. Each pass's lines are marked
# with its database. Every file takes free ports, fresh temporary folders, and names of its own
# for namespaces, interfaces and PostgreSQL databases (test/support/), so files never meet.
if [ "${CI:-}" = true ]; then passes="${TEST_PASSES:-serial}"; else passes="${TEST_PASSES:-together}"; fi
concurrency="${TEST_CONCURRENCY:-3}"
summary=()
status=0
# Each pass's output is kept too, so that the failures of every pass can end the log (a CI view
# that shows only the end of a long log still shows them all).
pass_logs=$(mktemp -d)
cli_build=".test-build-$$"
compiled=".test-build-$$-ts"
pass_names=()
pass_pids=()
mark_pids=()
stop_passes() {
  local pid
  for pid in "${pass_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
}
# The template on a server of the caller's (TEST_POSTGRES_URL) is dropped; a throw-away server goes whole.
drop_template() {
  if [ -n "${TEST_POSTGRES_TEMPLATE:-}" ] && [ -z "$throwaway_postgres_dir" ]; then
    node --import tsx test/support/migrated-databases.ts drop "$TEST_POSTGRES_URL" "$TEST_POSTGRES_TEMPLATE" || true
  fi
}
trap 'stop_passes; drop_template; stop_throwaway_postgres; rm -rf "$pass_logs" "$cli_build" "$compiled"' EXIT
trap 'stop_passes; stop_throwaway_postgres; exit 130' INT
trap 'stop_passes; stop_throwaway_postgres; exit 143' TERM

# The `vpn-portal` processes the tests start (portals, node agents, commands: a few hundred) run
# from JavaScript made of src/ here, once, in under a second (esbuild, file by file, into a
# folder of this run beside src/, so that paths relative to a module still lead to assets/ and
# package.json), instead of each compiling the sources through tsx (test/support/logged-process.ts).
node_modules/.bin/esbuild $(find src -name '*.ts') --outbase=src --outdir="$cli_build" --format=esm \
  --platform=node --target=node20 --log-level=warning
export TEST_CLI_BUILD="$PWD/$cli_build/cli/main.js"
# The test processes themselves run JavaScript of one more build of this run, of src/, test/,
# tools/ and bench/, with source maps for stack traces and coverage
# (test/support/build-test-modules.mjs): no TypeScript loader in each test process.
node test/support/build-test-modules.mjs "$compiled"

# Runs in a subshell of its own: becomes the test runner, so that its pid is the runner's.
run_pass() {
  local database=$1
  shift
  if [ "$database" = postgres ]; then
    export TEST_DATABASE_URL="$TEST_POSTGRES_URL"
  else
    unset TEST_DATABASE_URL
  fi
  # Test files of one area share a process, a dozen at most (test/support/group-test-files.mjs).
  # node --test with no file at all would look for tests everywhere: a grouping that failed stops here.
  local grouped entries
  grouped=$(node test/support/group-test-files.mjs "$compiled" "$database" "$@") || exit 2
  mapfile -t entries <<<"$grouped"
  exec node --enable-source-maps "${preloads[@]}" --test --test-concurrency="$concurrency" --test-reporter=spec "${entries[@]}"
}

for database in "${databases[@]}"; do
  selected=()
  note=''
  if [ "$database" = postgres ] && [ "${databases[*]}" = "sqlite postgres" ]; then
    # A file that never reaches a database gives the same answers twice: SQLite's pass runs it.
    reaching=$(node --import tsx test/support/database-files.ts "${files[@]}")
    if [ -n "$reaching" ]; then mapfile -t selected <<<"$reaching"; fi
    note=" (the $((${#files[@]} - ${#selected[@]})) that never reach a database: on SQLite only)"
  else
    for file in "${files[@]}"; do
      if [ "$database" = sqlite ] && [[ "$(basename "$file")" == postgres-* ]]; then continue; fi
      selected+=("$file")
    done
  fi
  [ "${#selected[@]}" -gt 0 ] || continue
  echo "=== test pass on $database: ${#selected[@]} files$note ==="
  if [ "${#databases[@]}" -gt 1 ] && [ "$passes" != serial ]; then
    exec {marked}> >(tee "$pass_logs/$database" | sed -u "s/^/[$database] /")
    mark_pids+=("$!")
    run_pass "$database" "${selected[@]}" >&"$marked" 2>&1 &
    pass_pids+=("$!")
    pass_names+=("$database")
    exec {marked}>&-
  elif (run_pass "$database" "${selected[@]}") 2>&1 | tee "$pass_logs/$database"; then
    summary+=("$database: passed")
  else
    summary+=("$database: FAILED")
    status=1
  fi
done
for index in "${!pass_pids[@]}"; do
  if wait "${pass_pids[$index]}"; then
    summary+=("${pass_names[$index]}: passed")
  else
    summary+=("${pass_names[$index]}: FAILED")
    status=1
  fi
done
pass_pids=()
for pid in "${mark_pids[@]}"; do wait "$pid" || true; done
if [ "$coverage" = 1 ]; then
  unset NODE_V8_COVERAGE
  echo "=== coverage of src/ (the full report: coverage/index.html)"
  floors=(--report-only)
  if [ "$#" -eq 0 ] && [ "${databases[*]}" = "sqlite postgres" ]; then floors=(); fi
  if ! node_modules/.bin/c8 report; then
    summary+=("coverage: the report failed")
    status=1
  elif ! node --import tsx tools/coverage/check-floors.ts "${floors[@]}"; then
    summary+=("coverage: below the floors in CONTRIBUTING.md")
    status=1
  fi
fi
for database in "${databases[@]}"; do
  log="$pass_logs/$database"
  if [ -f "$log" ] && grep -q '^✖ failing tests:' "$log"; then
    echo "=== the failing tests of the $database pass, once more"
    sed -n '/^✖ failing tests:/,$p' "$log"
  fi
done
if [ -n "${TEST_CPU_REPORT:-}" ]; then
  echo "=== where the time went ($TEST_CPU_REPORT)"
  node test/support/cpu-report.mjs "$TEST_CPU_REPORT"
fi
printf '=== %s\n' "${summary[@]}"
exit "$status"
