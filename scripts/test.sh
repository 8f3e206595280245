#!/usr/bin/env bash
# `make test`: the same set-up as `make run`, a broker if none answers, then the whole suite.
# The broker is left running for the next run; `make stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
scripts/broker.sh start
swift build --build-tests
# End-to-end tests start the real executables from here.
export HERALDTEST_BIN_DIR="$(swift build --show-bin-path)"
if [ $# -gt 0 ]; then exec swift test --skip-build "$@"; fi
# Pass 1: everything that shares the broker.
swift test --skip-build --skip BrokerOutageTests
# Pass 2: the tests that stop and start the broker, alone (they would disturb pass 1).
HERALDTEST_BROKER_CONTROL="$PWD/scripts/broker.sh" swift test --skip-build --filter BrokerOutageTests
