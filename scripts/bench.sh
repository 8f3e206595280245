#!/usr/bin/env bash
# `make bench`: release build, a broker, then herald-bench (which starts herald-api and
# herald-sms-worker against a fast fake gateway) prints the figures. Nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test   # the email run uses aiosmtpd from the project venv
scripts/broker.sh start
swift build -c release
export HERALDTEST_BIN_DIR="$(swift build -c release --show-bin-path)"
export HERALDTEST_PYTHON="$PWD/.herald/venv/bin/python"
"$HERALDTEST_BIN_DIR/herald-bench" "$@"
