#!/usr/bin/env bash
# `make bench`: release build, a broker and PostgreSQL, then herald-bench (which starts herald-api and
# herald-sms-worker against a fast fake gateway, on SQLite and on PostgreSQL) prints the figures.
# Nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --bench  # wrk and perf; the email run uses aiosmtpd from the project venv
scripts/broker.sh start
# The spine and limits suites run on SQLite and on PostgreSQL side by side.
scripts/postgres.sh start
export HERALDTEST_POSTGRES_URL="$(scripts/postgres.sh url)"
scripts/release-build.sh
export HERALDTEST_BIN_DIR="$(scripts/release-build.sh --show-bin-path)"
export HERALDTEST_PYTHON="$PWD/.herald/venv/bin/python"
"$HERALDTEST_BIN_DIR/herald-bench" "$@"
