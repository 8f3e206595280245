#!/usr/bin/env bash
# A project-local RabbitMQ for `make run` / `make test`: no systemd, every listener and epmd on
# 127.0.0.1, all state under $HERALD_STATE_DIR/rabbitmq (default .herald/rabbitmq, git-ignored).
# AMQP_PORT (default 5672) picks the port; several nodes can run side by side (the outage test starts
# its own on a free port). AMQP_TLS_PORT with AMQP_TLS_CERT, AMQP_TLS_KEY, AMQP_TLS_CA (and
# AMQP_TLS_REQUIRE_CLIENT_CERT=true) adds a TLS listener. The default node (port 5672) also runs the
# management plugin on 127.0.0.1:15672 (AMQP_MANAGEMENT_PORT; empty turns it off), which is what tells
# `herald-admin topology status` the unacknowledged counts.
#
#   scripts/broker.sh start   start one unless a broker already answers on $AMQP_PORT (default 5672)
#   scripts/broker.sh stop    stop the broker this script started (and its epmd), nothing else
#   scripts/broker.sh status  say whether a broker answers and whether it is ours
#   scripts/broker.sh stop-app | start-app   stop or start RabbitMQ inside our node (tests of broker outages)
set -euo pipefail
cd "$(dirname "$0")/.."

STATE_DIR=${HERALD_STATE_DIR:-.herald}
# The state directory also holds keys and the SQLite store: created owner-only, left as it is when it exists (scripts/postgres.sh may have added o+x for its server).
[ -d "$STATE_DIR" ] || mkdir -m 700 -p "$STATE_DIR"
BASE="$(cd "$STATE_DIR" && pwd)/rabbitmq"
PORT=${AMQP_PORT:-5672}
DIST_PORT=${AMQP_DIST_PORT:-$((PORT + 20000))}
# AMQP_HOST (default 127.0.0.1): the address every listener binds, for a node inside a test's network
# namespace (tests of a three-node cluster); such a node is named herald@<address> (Erlang long names).
HOST=${AMQP_HOST:-127.0.0.1}
NODE="herald@localhost"
if [ "$PORT" != 5672 ]; then NODE="herald-$PORT@localhost"; fi
LONGNAME=false
if [ "$HOST" != 127.0.0.1 ]; then NODE="herald@$HOST"; LONGNAME=true; fi
DIST_INTERFACE="{${HOST//./,}}"
EPMD_ADDRESS=127.0.0.1
if [ "$HOST" != 127.0.0.1 ]; then EPMD_ADDRESS="127.0.0.1,$HOST"; fi
BIN=/usr/lib/rabbitmq/bin

rmq_env() {
  env HOME="$BASE" RABBITMQ_NODENAME="$NODE" RABBITMQ_USE_LONGNAME="$LONGNAME" RABBITMQ_NODE_IP_ADDRESS="$HOST" \
    RABBITMQ_NODE_PORT="$PORT" RABBITMQ_DIST_PORT="$DIST_PORT" ERL_EPMD_ADDRESS="$EPMD_ADDRESS" \
    ERL_CRASH_DUMP="$BASE/erl_crash.dump" \
    RABBITMQ_MNESIA_BASE="$BASE/mnesia" RABBITMQ_LOG_BASE="$BASE/log" RABBITMQ_PID_FILE="$BASE/rabbit.pid" \
    RABBITMQ_CONFIG_FILE="$BASE/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins" \
    RABBITMQ_CONF_ENV_FILE="$BASE/rabbitmq-env.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$BASE/advanced.config" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface $DIST_INTERFACE" \
    RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface $DIST_INTERFACE" "$@"
}

answers() { (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; }

ours_running() { [ -f "$BASE/server.pid" ] && kill -0 "$(cat "$BASE/server.pid")" 2>/dev/null; }

start() {
  if answers; then
    if ours_running; then echo "broker: ours is already running on $HOST:$PORT"; else echo "broker: using the broker already answering on $HOST:$PORT"; fi
    return 0
  fi
  [ -x "$BIN/rabbitmq-server" ] || { echo "broker: rabbitmq-server is not installed (run scripts/setup.sh)" >&2; exit 1; }
  mkdir -p "$BASE"
  rm -f "$BASE/rabbit.pid"
  # Nodes of one cluster share the Erlang cookie (AMQP_COOKIE); a lone node makes its own.
  if [ -n "${AMQP_COOKIE:-}" ]; then
    (umask 077 && printf '%s' "$AMQP_COOKIE" > "$BASE/.erlang.cookie")
    chmod 400 "$BASE/.erlang.cookie"
  fi
  printf '%s\n' "listeners.tcp.default = $HOST:$PORT" 'raft.wal_max_size_bytes = 67108864' \
    'log.console = false' 'log.file.level = warning' > "$BASE/rabbitmq.conf"
  # Tests of amqps://: a TLS listener with the given certificate, checking clients against AMQP_TLS_CA.
  if [ -n "${AMQP_TLS_PORT:-}" ]; then
    printf '%s\n' "listeners.ssl.default = $HOST:$AMQP_TLS_PORT" "ssl_options.cacertfile = $AMQP_TLS_CA" \
      "ssl_options.certfile = $AMQP_TLS_CERT" "ssl_options.keyfile = $AMQP_TLS_KEY" 'ssl_options.verify = verify_peer' \
      "ssl_options.fail_if_no_peer_cert = ${AMQP_TLS_REQUIRE_CLIENT_CERT:-false}" >> "$BASE/rabbitmq.conf"
  fi
  MANAGEMENT_PORT=${AMQP_MANAGEMENT_PORT-}
  if [ -z "${AMQP_MANAGEMENT_PORT+set}" ] && [ "$PORT" = 5672 ]; then MANAGEMENT_PORT=15672; fi
  if [ -n "$MANAGEMENT_PORT" ]; then
    printf '%s\n' "management.tcp.ip = $HOST" "management.tcp.port = $MANAGEMENT_PORT" >> "$BASE/rabbitmq.conf"
    echo '[rabbitmq_management].' > "$BASE/enabled_plugins"
  else
    echo '[].' > "$BASE/enabled_plugins"
  fi
  : > "$BASE/rabbitmq-env.conf"
  echo '[].' > "$BASE/advanced.config"
  echo "broker: starting RabbitMQ on $HOST:$PORT (data in $BASE)"
  # setsid: Ctrl-C in a foreground `make run` must not reach the broker before we stop it ourselves.
  # Run from its own directory: what Erlang writes relative to its working directory (Mnesia's core
  # dump when its data vanished under it) stays there, never in the repository.
  rmq_env env -C "$BASE" setsid "$BIN/rabbitmq-server" > "$BASE/server.out" 2>&1 < /dev/null &
  echo $! > "$BASE/server.pid"
  if ! rmq_env "$BIN/rabbitmqctl" -q wait --timeout 120 "$BASE/rabbit.pid" > /dev/null 2>&1; then
    echo "broker: RabbitMQ did not start; last lines of $BASE/server.out:" >&2
    tail -20 "$BASE/server.out" >&2
    exit 1
  fi
  echo "broker: ready"
}

stop() {
  if ours_running; then
    echo "broker: stopping the RabbitMQ started by this script"
    # The Erlang VM's own pid is in rabbit.pid; server.pid is the shell that waits for it.
    rmq_env "$BIN/rabbitmqctl" -q shutdown > /dev/null 2>&1 || kill "$(cat "$BASE/rabbit.pid" 2>/dev/null)" 2>/dev/null || true
    for _ in $(seq 1 300); do ours_running || break; sleep 0.2; done
    # Still up after 60 s (a loaded machine): killed, never left running, since callers delete the
    # node's directory next and a node whose data vanished keeps running and dumps Mnesia's core.
    if ours_running; then
      echo "broker: RabbitMQ did not stop within 60 s; killing it" >&2
      kill -9 "$(cat "$BASE/rabbit.pid" 2>/dev/null)" 2>/dev/null || true
      for _ in $(seq 1 50); do ours_running || break; sleep 0.2; done
    fi
    rm -f "$BASE/server.pid"
    # epmd outlives the broker; stop the one bound for it (only when no other Erlang node uses it).
    if command -v epmd > /dev/null && ! epmd -names 2>/dev/null | grep -q '^name '; then epmd -kill > /dev/null 2>&1 || true; fi
  else
    echo "broker: none started by this script is running"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  stop-app|start-app)
    ours_running || { echo "broker: only the broker started by this script can be stopped and started" >&2; exit 1; }
    rmq_env "$BIN/rabbitmqctl" -q "${1//-/_}" ;;
  status)
    if answers; then echo "broker: answering on $HOST:$PORT$(ours_running && echo ' (ours)')"; else echo "broker: nothing on $HOST:$PORT"; fi ;;
  join)
    # Joins this (running) node to the cluster of node $2 (herald@<address>): its data is reset.
    ours_running || { echo "broker: only the broker started by this script can join a cluster" >&2; exit 1; }
    rmq_env "$BIN/rabbitmqctl" -q stop_app
    rmq_env "$BIN/rabbitmqctl" -q join_cluster "$2"
    rmq_env "$BIN/rabbitmqctl" -q start_app ;;
  ctl)
    # Any rabbitmqctl command against our node (tests: cluster_status, list_queues …).
    shift
    rmq_env "$BIN/rabbitmqctl" "$@" ;;
  *) echo "usage: $0 start|stop|status|stop-app|start-app|join <node>|ctl <rabbitmqctl arguments>" >&2; exit 2 ;;
esac
