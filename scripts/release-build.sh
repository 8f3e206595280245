#!/usr/bin/env bash
# The release build Herald ships and measures: `swift build -c release` with cross-module optimisation
# for every module, dependencies included, so generic code of SwiftNIO, Hummingbird and swift-crypto
# is specialised and inlined into Herald's callers instead of running through witness tables and
# runtime metadata lookups. The flag has to reach the dependencies' own compilation (their bodies are
# what gets serialised for callers), which only the command line can do: a package's swiftSettings
# apply to its own targets. It saves about 5 % of herald-api's CPU per send and 2–3 % of the worker's
# per job, and makes a build from scratch take about 16 minutes instead of 11.
#
# The Swift runtime and Foundation are linked statically (`--static-swift-stdlib`), as the Docker image
# ships them: every retain, release and runtime call is then a direct call instead of one through the
# dynamic linker's tables (about 6 % of herald-api's CPU per send, 4 % of the worker's per job, and
# 1 MiB less peak memory). The executables are larger on disk (herald-api 190 MB with symbols).
#
# Exclusivity is enforced at compile time only (`-enforce-exclusivity=unchecked`): the runtime check
# of every access to a class property or global (`swift_beginAccess`) would be about 4.5 % of
# herald-api's instructions per send. Swift 6's data-race checking is unchanged, and the debug builds
# `make test` runs keep the runtime check, so an overlapping access on any path the suite drives still
# stops a test; in these builds it would go undetected instead of trapping.
#
# Arguments go to `swift build` (`--product herald-api`, `--show-bin-path`). Used by `make bench`,
# `make bench-pair` and deploy/docker/Dockerfile. Changing these flags rebuilds every release module
# once.
set -euo pipefail
exec swift build -c release -Xswiftc -cross-module-optimization -Xswiftc -enforce-exclusivity=unchecked --static-swift-stdlib "$@"
