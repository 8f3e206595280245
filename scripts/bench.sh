#!/usr/bin/env bash
# `make bench`: release build, a broker, then herald-bench (which starts herald-api and
# herald-sms-worker against a fast fake gateway) prints the figures. Nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/broker.sh start
swift build -c release
export HERALDTEST_BIN_DIR="$(swift build -c release --show-bin-path)"
"$HERALDTEST_BIN_DIR/herald-bench" "$@"
