#!/usr/bin/env bash
# The release build Herald ships and measures: `swift build -c release` with cross-module optimisation
# for every module, dependencies included, so generic code of SwiftNIO, Hummingbird and swift-crypto
# is specialised and inlined into Herald's callers instead of running through witness tables and
# runtime metadata lookups. The flag has to reach the dependencies' own compilation (their bodies are
# what gets serialised for callers), which only the command line can do: a package's swiftSettings
# apply to its own targets. Measured with the pair suites in one noisy hour (README, Performance):
# herald-api's CPU per send 0.947 [0.896–0.973] on SQLite and 0.980 [0.956–0.983] on PostgreSQL,
# herald-sms-worker's per job 0.975 [0.950–1.018] with 1 MiB more peak RSS; a build from scratch took
# 16 minutes instead of about 11. The same flag on Herald's own modules only had measured 0.992.
#
# Arguments go to `swift build` (`--product herald-api`, `--show-bin-path`, `--static-swift-stdlib`).
# Used by `make bench`, `make bench-pair` and deploy/docker/Dockerfile. Changing these flags rebuilds
# every release module once.
set -euo pipefail
exec swift build -c release -Xswiftc -cross-module-optimization "$@"
