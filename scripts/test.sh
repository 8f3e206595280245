#!/usr/bin/env bash
# `make test`: the same set-up as `make run`, a broker if none answers, then the whole suite.
# The broker and PostgreSQL are left running for the next run; `make stop` stops them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test
# Formatting first (seconds): .swift-format pins the house style, the toolchain's swift-format checks it.
swift format lint --strict --recursive --parallel Sources Tests Package.swift
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
if [ $# -gt 0 ]; then
  swift test --skip-build "$@"
else
  # The cross-host test runs three RabbitMQ nodes, PostgreSQL and four Herald processes: on its own
  # after the rest, so its load does not disturb the timing-sensitive tests that run in parallel.
  swift test --skip-build --skip ClusterTests
  swift test --skip-build --filter ClusterTests
fi
