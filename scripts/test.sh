#!/usr/bin/env bash
# `make test`: the same set-up as `make run`, a broker if none answers, then the whole suite.
# The broker and PostgreSQL are left running for the next run; `make stop` stops them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
# Formatting and the docs' links first (seconds).
scripts/lint.sh
scripts/broker.sh start
# A project-local PostgreSQL for the store conformance suite and the end-to-end runs on PostgreSQL.
scripts/postgres.sh start
export HERALDTEST_POSTGRES_URL="$(scripts/postgres.sh url)"
# Every import must be a declared dependency of its target.
swift build --build-tests --explicit-target-dependency-import-check error
# End-to-end tests start the real executables from here.
export HERALDTEST_BIN_DIR="$(swift build --show-bin-path)"
# The SMTP server and firebase-admin tests run Python from the project venv.
export HERALDTEST_PYTHON="$PWD/.herald/venv/bin/python"
# At most eight tests at once (Swift Testing's default is all of them): started together, ~70 suites
# each declaring ~45 quorum queues and spawning their processes starve a 2-core machine so badly that
# the broker's queue.declare takes over 10 s. Eight keeps the run as short as no limit, because most
# tests wait on processes, not the CPU.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}"
# Each run's whole output is kept in .herald/logs/; on failure the failed tests and their issues are
# printed again at the end, so a CI log cut to its last lines still says what failed and where.
run_suite() {
  local log="$1"
  shift
  mkdir -p .herald/logs
  local status=0
  swift test --skip-build "$@" 2>&1 | tee "$log" || status=$?
  if [ "$status" -ne 0 ]; then
    # CI shows only the last twenty-odd lines: which tests failed first, then the first issues, last.
    echo
    echo "== tests that failed ($(grep -E '^✘ Test .* failed after' "$log" | grep -vc '^✘ Test run with' || true) in all; whole output: $log) =="
    grep -E '^✘ Test .* failed after' "$log" | grep -v '^✘ Test run with' | cut -c1-120 | head -n 5 || true
    echo "== first issues recorded ($(grep -c 'recorded an issue' "$log" || true) in all) =="
    grep -E 'recorded an issue|^error: |: error: ' "$log" | sed -E 's/^✘ Test "([^"]{0,40})[^"]*"/✘ "\1…"/' | cut -c1-300 | head -n 10 || true
  fi
  return "$status"
}
if [ $# -gt 0 ]; then
  run_suite .herald/logs/test-selected.log "$@"
else
  # The cross-host test runs three RabbitMQ nodes, PostgreSQL and four Herald processes: on its own
  # after the rest, so its load does not disturb the timing-sensitive tests that run in parallel.
  run_suite .herald/logs/test-suite.log --skip ClusterTests
  run_suite .herald/logs/test-cluster.log --filter ClusterTests
fi
