#!/usr/bin/env bash
# PostgreSQL's own time for Herald's group-commit routine, without herald-api, the broker or a worker:
# pgbench calls the newest `herald_batch_vN` with batches shaped like herald-api's admissions (six limit keys and
# the pumping count per send, a fresh number each) and the worker's claims and outcomes, generated in
# SQL, and prints the time per call of each. For comparing routine versions, databases (a locale, a
# snapshot held beside the run) or server settings on equal terms. Uses the project's PostgreSQL
# (scripts/postgres.sh start) unless PG_URL names another server's database (postgres://user:pw@host:port/db).
#
#   scripts/pg-batch-bench.sh [seconds (20)] [sends per batch (16)] [clients (1)]
#
# It migrates a schema of its own (`pgbench_<random>`) with herald-admin ($PG_BENCH_ADMIN, else from
# .build/release or .build/debug), and drops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN=${1:-20}
BATCH=${2:-16}
CLIENTS=${3:-1}
URL=${PG_URL:-$(scripts/postgres.sh url 2>/dev/null || true)}
[ -n "$URL" ] || { echo "pg-batch-bench: no PostgreSQL (scripts/postgres.sh start, or set PG_URL)" >&2; exit 1; }
URL=${URL%%\?*}
ADMIN=${PG_BENCH_ADMIN:-}
for candidate in .build/release/herald-admin .build/debug/herald-admin; do
  [ -z "$ADMIN" ] || break
  if [ -x "$candidate" ]; then ADMIN=$candidate; break; fi
done
[ -n "$ADMIN" ] || { echo "pg-batch-bench: build herald-admin first (swift build)" >&2; exit 1; }
BIN=/usr/lib/postgresql/15/bin
[ -x "$BIN/pgbench" ] || BIN=$(dirname "$(command -v pgbench)")

# psql and pgbench take the URL as it is; its password goes to them in PGPASSWORD, not on their
# command lines, where any local user's `ps` would show it.
export PGPASSWORD=$(sed -nE 's|^postgres(ql)?://[^:@/]*:([^@]*)@.*|\2|p' <<< "$URL")
CONNECTION=$(sed -E 's|^(postgres(ql)?://[^:@/]*):[^@]*@|\1@|' <<< "$URL")
SCHEMA="pgbench_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
WORK=$(mktemp -d)
cleanup() {
  PGOPTIONS= "$BIN/psql" -X -q -d "$CONNECTION" \
    -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" > /dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

HERALD_STORE_URL="$URL?schema=$SCHEMA" "$ADMIN" store migrate > /dev/null
export PGOPTIONS="-c search_path=$SCHEMA"

cat > "$WORK/generators.sql" <<'SQL'
-- Operations as herald-api and herald-sms-worker send them (the field names of PostgresBatcher.body).
CREATE FUNCTION bench_admits(n integer) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT jsonb_agg(jsonb_build_object(
    'blockUs', 43200000000, 'clientKey', '127.0.0.1', 'codeHash', md5(random()::text) || md5(random()::text),
    'createdMs', (extract(epoch from clock_timestamp()) * 1000)::bigint,
    'expiresMs', (extract(epoch from clock_timestamp()) * 1000)::bigint + 600000,
    'firstFactorOnly', 'true', 'id', md5(random()::text) || md5(random()::text), 'jobId', gen_random_uuid()::text,
    'limits', jsonb_build_array(
      jsonb_build_array('ip:bench:127.0.0.1|1000000/1s', 1, 1000000),
      jsonb_build_array('number:bench:' || p.phone || '|5/1h', 720000000, 3600000000),
      jsonb_build_array('number:bench:' || p.phone || '|10/1d', 8640000000, 86400000000),
      jsonb_build_array('project:bench:bench|1000000/1s', 1, 1000000),
      jsonb_build_array('country:bench:US|1000000/1s', 1, 1000000),
      jsonb_build_array('prefix:bench:' || left(p.phone, 7) || '|1000000/1s', 1, 1000000)),
    'maxAttempts', 3, 'minSends', 1000000, 'multiple', 10.0,
    'nowUs', (extract(epoch from clock_timestamp()) * 1000000)::bigint, 'op', 'admit', 'phone', p.phone,
    'prefix', left(p.phone, 7), 'project', 'bench', 'purpose', 'signIn', 'region', 'US', 'smoothing', 0.1,
    'windowText', '10m', 'windowUs', 600000000))
  FROM (SELECT '+1555' || lpad((random() * 9999999)::bigint::text, 7, '0') AS phone FROM generate_series(1, n)) p
$$;
CREATE FUNCTION bench_claims(n integer) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE(jsonb_agg(jsonb_build_object(
    'eventHead', t.now_ms || E'\tsending\tattempt ', 'eventTail', E' by bench\n', 'jobId', d.job_id, 'nowMs', t.now_ms,
    'op', 'claim', 'owner', 'bench', 'producer', 'herald-api', 'project', d.project_id, 'provider', 'http',
    'reclaim', 'false', 'template', 'verification', 'to', d.destination, 'type', 'sms')), '[]')
  FROM (SELECT job_id, project_id, destination FROM deliveries WHERE status = 'pending' ORDER BY updated_at_ms LIMIT n) d,
       (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms) t
$$;
CREATE FUNCTION bench_outcomes(n integer) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE(jsonb_agg(jsonb_build_object(
    'encoding', 'GSM-7', 'event', t.now_ms || E'\tsent\t\n', 'jobId', d.job_id, 'nowMs', t.now_ms, 'op', 'record',
    'segments', 1, 'status', 'sent')), '[]')
  FROM (SELECT job_id FROM deliveries WHERE status = 'sending' ORDER BY updated_at_ms LIMIT n) d,
       (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms) t
$$;
SQL
"$BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$CONNECTION" -f "$WORK/generators.sql"

# The newest batch routine the migration installed (herald_batch_vN).
ROUTINE=$("$BIN/psql" -X -At -d "$CONNECTION" -c "SELECT proname FROM pg_proc
  WHERE pronamespace = current_schema()::regnamespace AND proname ~ '^herald_batch_v[0-9]+$'
  ORDER BY substring(proname from '[0-9]+$')::int DESC LIMIT 1")
[ -n "$ROUTINE" ] || { echo "pg-batch-bench: no herald_batch_v* routine in the migrated schema" >&2; exit 1; }
for kind in admits claims outcomes; do
  echo "SELECT count(*) FROM $ROUTINE(bench_$kind(:batch));"
done > "$WORK/cycle.sql"

DATABASE=$("$BIN/psql" -X -At -d "$CONNECTION" \
  -c "SELECT current_database() || ' (collation ' || datcollate || ')' FROM pg_database WHERE datname = current_database()")
echo "pg-batch-bench: $DATABASE, $CLIENTS client(s), $BATCH sends per batch, $SECONDS_TO_RUN s"
"$BIN/pgbench" -n -r -c "$CLIENTS" -T "$SECONDS_TO_RUN" -D batch="$BATCH" -f "$WORK/cycle.sql" "$CONNECTION" 2>&1 |
  awk '/^latency average|^tps/ { print "  " $0 } /herald_batch_v/ { sub(/^ +/, ""); split($0, f, " +"); print "  " f[1] " ms per call: " substr($0, index($0, "SELECT")) }'
