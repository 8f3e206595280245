#!/usr/bin/env bash
# `make bench-pair BASE=<commit>`: this tree's herald-api and herald-sms-worker against another
# commit's, loaded at the same time so both share the hour's neighbours (see docs/performance.md
# section). The other commit is built once, in release mode, in a git worktree at
# .herald/baseline/<commit>/src (about 15 minutes from scratch); its herald-api and herald-sms-worker
# are kept in .herald/baseline/<commit>/bin for later runs and the checkout is removed. Then the pair
# suites run: herald-api's CPU per send on SQLite and on PostgreSQL, and herald-sms-worker's CPU per
# job. Each prints the ratio per paired run and the median with its range. Nothing is asserted.
#
#   BASE      the commit to compare with (required)
#   RUNS      paired runs per suite (default 5)
#   SUITES    which of api, api-postgres, worker (default all three)
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=${BASE:-${1:-}}
[ -n "$BASE" ] || { echo "usage: make bench-pair BASE=<commit> [RUNS=5] [SUITES='api api-postgres worker']" >&2; exit 2; }
COMMIT=$(git rev-parse --verify "$BASE^{commit}") || { echo "bench-pair: $BASE is not a commit here" >&2; exit 2; }
RUNS=${RUNS:-5}
SUITES=${SUITES:-api api-postgres worker}
SHORT=${COMMIT:0:12}
TREE=$PWD/.herald/baseline/$SHORT
SRC=$TREE/src
BIN=$TREE/bin

scripts/setup.sh --bench
scripts/broker.sh start
scripts/postgres.sh start
export HERALDTEST_POSTGRES_URL="$(scripts/postgres.sh url)"
export HERALDTEST_PYTHON="$PWD/.herald/venv/bin/python"

if [ ! -x "$BIN/herald-api" ] || [ ! -x "$BIN/herald-sms-worker" ]; then
  echo "bench-pair: building $SHORT in $SRC (release; about 15 minutes from scratch)"
  if [ ! -d "$SRC" ]; then
    mkdir -p "$TREE"
    git worktree add --detach "$SRC" "$COMMIT" > /dev/null
  fi
  # Each commit is built the way it shipped: with its own scripts/release-build.sh where it has one
  # (cross-module optimisation), plainly before that.
  BUILD=(swift build -c release)
  [ -x "$SRC/scripts/release-build.sh" ] && BUILD=(scripts/release-build.sh)
  (cd "$SRC" && "${BUILD[@]}" --product herald-api && "${BUILD[@]}" --product herald-sms-worker)
  BASEBIN="$(cd "$SRC" && "${BUILD[@]}" --show-bin-path)"
  mkdir -p "$BIN"
  cp "$BASEBIN/herald-api" "$BASEBIN/herald-sms-worker" "$BIN/"
  # The executables are all a pair needs; the checkout and its build directory (gigabytes) go.
  git worktree remove --force "$SRC"
fi

scripts/release-build.sh
THIS="$(scripts/release-build.sh --show-bin-path)"
export HERALDTEST_BIN_DIR="$THIS"
echo "bench-pair: this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', with changes')) against $SHORT, $RUNS paired runs each"
for suite in $SUITES; do
  case "$suite" in
    api) "$THIS/herald-bench" pair --baseline-bin "$BIN" --runs "$RUNS" ;;
    api-postgres) "$THIS/herald-bench" pair --baseline-bin "$BIN" --runs "$RUNS" --profile-store postgres ;;
    worker) "$THIS/herald-bench" worker-pair --baseline-bin "$BIN" --backlog 15000 --runs "$RUNS" ;;
    *) echo "bench-pair: unknown suite $suite (api, api-postgres, worker)" >&2; exit 2 ;;
  esac
done
