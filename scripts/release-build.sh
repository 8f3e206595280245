#!/usr/bin/env bash
# The release build Herald ships and measures: `swift build -c release` with cross-module optimisation
# for every module, dependencies included, so generic code of SwiftNIO, Hummingbird and swift-crypto
# is specialised and inlined into Herald's callers instead of running through witness tables and
# runtime metadata lookups. The flag has to reach the dependencies' own compilation (their bodies are
# what gets serialised for callers), which only the command line can do: a package's swiftSettings
# apply to its own targets. Measured with the pair suites in one noisy hour (docs/performance.md):
# herald-api's CPU per send 0.947 [0.896–0.973] on SQLite and 0.980 [0.956–0.983] on PostgreSQL,
# herald-sms-worker's per job 0.975 [0.950–1.018] with 1 MiB more peak RSS; a build from scratch took
# 16 minutes instead of about 11. The same flag on Herald's own modules only had measured 0.992.
#
# The Swift runtime and Foundation are linked statically (`--static-swift-stdlib`), as the Docker image
# always shipped them: every retain, release and runtime call is then a direct call instead of one
# through the dynamic linker's tables. Pair suites against the same code linked dynamically (both
# cross-module optimised): herald-api 0.938 [0.921–0.950] per send on SQLite over 7 runs,
# herald-sms-worker 0.960 [0.945–0.984] per job over 3 drains, its peak RSS 51–52 MiB against 52–53.
# The executables are larger on disk (herald-api 190 MB with symbols, against 114).
#
# Exclusivity is enforced at compile time only (`-enforce-exclusivity=unchecked`): the runtime check
# of every access to a class property or global (`swift_beginAccess`) was 4.5 % of herald-api's
# instructions per send (`herald-bench --suite instructions`: 502,000 → 479,600), pair suite 0.966
# [0.963–0.986] of the CPU per send over 5 runs. Swift 6's data-race checking is unchanged, and the
# debug builds `make test` runs keep the runtime check, so an overlapping access on any path the suite
# drives still stops a test; in these builds it would go undetected instead of trapping.
#
# Arguments go to `swift build` (`--product herald-api`, `--show-bin-path`). Used by `make bench`,
# `make bench-pair` and deploy/docker/Dockerfile. Changing these flags rebuilds every release module
# once.
set -euo pipefail
exec swift build -c release -Xswiftc -cross-module-optimization -Xswiftc -enforce-exclusivity=unchecked --static-swift-stdlib "$@"
