# Sourced by test/run.sh and bench/run.sh: `start_throwaway_postgres` starts a PostgreSQL
# server for this run only — a fresh data directory under /tmp, listening on 127.0.0.1 at a
# free port, password authentication — exports TEST_POSTGRES_URL
# (postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres) and TEST_POSTGRES_SOCKET_DIR (the folder of
# its Unix socket, where local connections are trusted: the Unix-socket test) and stops the server and deletes the
# directory when the calling script exits (trap on EXIT, INT and TERM). With TEST_POSTGRES_URL
# already set, that server is used and nothing is started.
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` user (created
# when missing). The server binaries come from Debian's `postgresql` package (.ci/run installs it).

throwaway_postgres_dir=''

stop_throwaway_postgres() {
  if [ -n "$throwaway_postgres_dir" ] && [ -d "$throwaway_postgres_dir" ]; then
    as_postgres_user "$throwaway_postgres_bin/pg_ctl" -D "$throwaway_postgres_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$throwaway_postgres_dir"
  fi
  throwaway_postgres_dir=''
}

as_postgres_user() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

find_postgres_bin() {
  local candidate
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/pg_ctl" ] && [ -x "$candidate/initdb" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

start_throwaway_postgres() {
  if [ -n "${TEST_POSTGRES_URL:-}" ]; then
    echo "PostgreSQL: using TEST_POSTGRES_URL"
    return 0
  fi
  if ! throwaway_postgres_bin=$(find_postgres_bin); then
    echo "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's postgresql package (.ci/run does), or set TEST_POSTGRES_URL" >&2
    return 1
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi
  throwaway_postgres_dir=$(mktemp -d /tmp/vpn-portal-postgres.XXXXXX)
  # Whose server this is, for someone who finds several on one machine: the script's process
  # and its command line (the server goes when that process exits).
  printf 'pid %s: %s\n' "$$" "$(tr '\0' ' ' </proc/$$/cmdline)" >"$throwaway_postgres_dir/owner"
  trap stop_throwaway_postgres EXIT
  trap 'stop_throwaway_postgres; exit 130' INT
  trap 'stop_throwaway_postgres; exit 143' TERM
  if [ "$(id -u)" = 0 ]; then chown postgres "$throwaway_postgres_dir"; fi

  local password port attempt
  password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  printf '%s\n' "$password" >"$throwaway_postgres_dir/password"
  if [ "$(id -u)" = 0 ]; then chown postgres "$throwaway_postgres_dir/password"; fi
  # The database's default collation is ICU's en-US, not bytewise: the portal must not depend
  # on the locale a PostgreSQL database was created with (its columns compare bytewise). A
  # server without ICU (or older than 15) gets C.UTF-8.
  if ! as_postgres_user "$throwaway_postgres_bin/initdb" -D "$throwaway_postgres_dir/data" -U postgres \
    --pwfile="$throwaway_postgres_dir/password" --auth-host=scram-sha-256 --auth-local=trust \
    --encoding=UTF8 --locale=C.UTF-8 --locale-provider=icu --icu-locale=en-US --no-sync >"$throwaway_postgres_dir/initdb.log" 2>&1; then
    rm -rf "$throwaway_postgres_dir/data"
    as_postgres_user "$throwaway_postgres_bin/initdb" -D "$throwaway_postgres_dir/data" -U postgres \
      --pwfile="$throwaway_postgres_dir/password" --auth-host=scram-sha-256 --auth-local=trust \
      --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$throwaway_postgres_dir/initdb.log" 2>&1 || {
      cat "$throwaway_postgres_dir/initdb.log" >&2
      return 1
    }
  fi
  # A free port is picked by the kernel; should another process take it before the server
  # starts, the start fails and another port is tried.
  for attempt in 1 2 3 4 5; do
    port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
    # Throw-away data: no fsync. Enough connections for two test files at a time, each with
    # several portals of up to 10 pooled connections.
    if as_postgres_user "$throwaway_postgres_bin/pg_ctl" -D "$throwaway_postgres_dir/data" -l "$throwaway_postgres_dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -k $throwaway_postgres_dir -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null; then
      export TEST_POSTGRES_URL="postgres://postgres:$password@127.0.0.1:$port/postgres"
      export TEST_POSTGRES_SOCKET_DIR="$throwaway_postgres_dir"
      echo "PostgreSQL: throw-away server on 127.0.0.1:$port ($throwaway_postgres_dir)"
      return 0
    fi
  done
  cat "$throwaway_postgres_dir/server.log" >&2
  return 1
}
