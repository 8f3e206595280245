#!/usr/bin/env bash
# `make unit`: every test that needs no service (no broker, no PostgreSQL, no Python, no browser),
# against SQLite and the memory store, in about a minute. The suites and tests it leaves out are those
# that start a broker connection, a PostgreSQL schema or a Python program; `make test` runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."

services=(
  EndToEndTests
  # Against a real broker.
  AMQPConnectionTests FailoverAndTLSTests
  # herald-api in process against a real broker.
  AppLinkTests AppVerificationTests AppleSignInTests CustomClaimsTests EmailLinkTests LimitsTests
  AccountEmailTests PasswordAccountTests PhoneAccountTests PhoneSignInTests RecaptchaFallbackTests SecurityTests UserImportTests 'HostileTextTests/locales'
  # PostgreSQL only.
  LeaseDeadlinesTests PostgresBatchBenchScriptTests PostgresRoutinesTests PostgresSchemaTests StoreCopyTests
  'DurabilityTests/postgresSynchronousCommit' 'StoreHealthTests/heldByAnotherConnection'
)
skip="$(IFS='|'; echo "${services[*]}")"
swift build --build-tests
HERALDTEST_SERVICES=none swift test --skip-build --skip "$skip"
