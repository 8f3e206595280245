#!/usr/bin/env bash
# A project-local PostgreSQL 15 for `make test` (and for trying `store.url: postgres://…` by hand): no
# systemd, listening on 127.0.0.1 only (no Unix socket), all state under $HERALD_STATE_DIR/postgres
# (default .herald/postgres, git-ignored). PG_PORT (default 15432) picks the port, away from a system
# PostgreSQL on 5432.
#
#   scripts/postgres.sh start    initialise on first use, start unless ours already runs, print nothing else
#   scripts/postgres.sh stop     stop the server this script started, nothing else
#   scripts/postgres.sh status   say whether ours runs
#   scripts/postgres.sh url      print the store.url of the `herald` database (user, password, port)
#
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` user of Debian's package,
# owns only .herald/postgres, and the state directory gets o+x (traverse, no listing; every file in it
# is 0600) so that user can reach its own directory.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE_DIR=${HERALD_STATE_DIR:-.herald}
mkdir -p "$STATE_DIR"
BASE="$(cd "$STATE_DIR" && pwd)/postgres"
DATA="$BASE/data"
PORT=${PG_PORT:-15432}
# PG_HOST: the address to listen on (tests put a server inside a network namespace of their own);
# PG_ALLOW: a CIDR block whose clients may log in with the password besides loopback (e.g. 10.77.0.0/24).
# PG_TLS_CERT and PG_TLS_KEY (PEM files): serve TLS with them and refuse connections without it
# (tests of sslmode and store.tls.caFile).
HOST=${PG_HOST:-127.0.0.1}
BIN=/usr/lib/postgresql/15/bin
URL_FILE="$BASE/url"

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

ours_running() { [ -f "$DATA/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status > /dev/null 2>&1; }

answers() { (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; }

initialise() {
  [ -x "$BIN/initdb" ] || { echo "postgres: PostgreSQL 15 is not installed (run scripts/setup.sh --test)" >&2; exit 1; }
  echo "postgres: initialising $DATA"
  mkdir -p "$BASE"
  chmod 700 "$BASE"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$BASE"
  local password
  password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
  local pwfile="$BASE/initdb.pw"
  (umask 077 && printf '%s\n' "$password" > "$pwfile")
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$pwfile"
  as_owner "$BIN/initdb" -D "$DATA" -U herald --pwfile="$pwfile" --auth=scram-sha-256 -E UTF8 --no-locale > "$BASE/initdb.log" 2>&1 || {
    echo "postgres: initdb failed; see $BASE/initdb.log" >&2
    rm -f "$pwfile"
    exit 1
  }
  rm -f "$pwfile"
  # Tests open many pools (every process and store has its own), so allow more than the default 100.
  printf '%s\n' "listen_addresses = '$HOST'" "unix_socket_directories = ''" "max_connections = 400" \
    "logging_collector = off" >> "$DATA/postgresql.conf"
  if [ -n "${PG_ALLOW:-}" ]; then printf 'host all all %s scram-sha-256\n' "$PG_ALLOW" >> "$DATA/pg_hba.conf"; fi
  if [ -n "${PG_TLS_CERT:-}" ]; then
    # The server reads its key as its own user, and only from a file nobody else can read.
    install -m 0644 "$PG_TLS_CERT" "$DATA/server.crt"
    install -m 0600 "$PG_TLS_KEY" "$DATA/server.key"
    [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$DATA/server.crt" "$DATA/server.key"
    printf '%s\n' "ssl = on" "ssl_cert_file = 'server.crt'" "ssl_key_file = 'server.key'" >> "$DATA/postgresql.conf"
    # TLS or nothing: every plain "host" rule becomes "hostssl".
    sed -i 's/^host /hostssl /' "$DATA/pg_hba.conf"
  fi
  (umask 077 && printf 'postgres://herald:%s@%s:%s/herald\n' "$password" "$HOST" "$PORT" > "$URL_FILE")
  NEW=1
}

start() {
  if ours_running; then echo "postgres: ours is already running on $HOST:$PORT"; return 0; fi
  if answers; then
    echo "postgres: something else answers on $HOST:$PORT; choose another PG_PORT" >&2
    exit 1
  fi
  NEW=0
  # Checked on every start: something may have made the state directory owner-only again.
  [ "$(id -u)" -ne 0 ] || chmod o+x "$STATE_DIR"
  [ -f "$DATA/PG_VERSION" ] || initialise
  echo "postgres: starting PostgreSQL 15 on $HOST:$PORT (data in $DATA)"
  # setsid: Ctrl-C in a foreground `make run` must not reach the server before we stop it ourselves.
  if ! as_owner setsid "$BIN/pg_ctl" -D "$DATA" -l "$BASE/server.log" -o "-p $PORT" -w -t 60 start > /dev/null; then
    echo "postgres: PostgreSQL did not start; last lines of $BASE/server.log:" >&2
    tail -20 "$BASE/server.log" >&2
    exit 1
  fi
  if [ "$NEW" = 1 ]; then
    PGPASSWORD=$(sed -E 's|^postgres://herald:([^@]*)@.*|\1|' "$URL_FILE") \
      "$BIN/psql" -q -h "$HOST" -p "$PORT" -U herald -d postgres -c 'CREATE DATABASE herald' > /dev/null
  fi
  echo "postgres: ready"
}

stop() {
  if ours_running; then
    echo "postgres: stopping the PostgreSQL started by this script"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop > /dev/null
  else
    echo "postgres: none started by this script is running"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if ours_running; then echo "postgres: ours is running on $HOST:$PORT"; else echo "postgres: ours is not running"; fi ;;
  url) [ -f "$URL_FILE" ] || { echo "postgres: not initialised (scripts/postgres.sh start)" >&2; exit 1; }; cat "$URL_FILE" ;;
  *) echo "usage: $0 start|stop|status|url" >&2; exit 2 ;;
esac
