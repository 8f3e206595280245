#!/usr/bin/env bash
# `make run`: broker, build, then herald-api and the sms, email, push and apple workers in
# the foreground with config/herald.yaml (devMode, console providers). Ctrl-C stops what this script started, only that.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=${HERALD_CONFIG:-config/herald.yaml}
started_broker=0
if ! scripts/broker.sh status | grep -q answering; then started_broker=1; fi
scripts/broker.sh start

swift build
BIN=$(swift build --show-bin-path)

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "run: stopping herald processes"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$started_broker" = 1 ]; then scripts/broker.sh stop; fi
}
trap cleanup INT TERM EXIT

"$BIN/herald-api" --config "$CONFIG" & pids+=($!)
"$BIN/herald-sms-worker" --config "$CONFIG" & pids+=($!)
"$BIN/herald-email-worker" --config "$CONFIG" & pids+=($!)
"$BIN/herald-push-worker" --config "$CONFIG" & pids+=($!)
"$BIN/herald-apple-worker" --config "$CONFIG" & pids+=($!)

cat <<MSG

Herald is running (Ctrl-C stops it):
  API            http://127.0.0.1:9099   (JWKS at /.well-known/jwks.json; metrics at http://127.0.0.1:9100/metrics)
  sms worker     http://127.0.0.1:9101/metrics   (console provider: SMS texts appear below)
  email worker   http://127.0.0.1:9102/metrics   (console provider: sign-in mails appear below)
  push worker    http://127.0.0.1:9103/metrics   (console provider: silent pushes appear below)
  apple worker   http://127.0.0.1:9104/metrics   (Sign in with Apple token revocation; idle until a project enables it)

Try:
  curl -s -X POST 'http://127.0.0.1:9099/identitytoolkit.googleapis.com/v1/accounts:sendVerificationCode?key=demo-api-key' \\
       -H 'Content-Type: application/json' -d '{"phoneNumber":"+15555550100"}'
  curl -s -X POST 'http://127.0.0.1:9099/identitytoolkit.googleapis.com/v1/accounts:sendOobCode?key=demo-api-key' \\
       -H 'Content-Type: application/json' \\
       -d '{"requestType":"EMAIL_SIGNIN","email":"alice@example.com","continueUrl":"http://localhost/finish"}'

MSG
# Wait until any process exits (then stop the others) or Ctrl-C.
wait -n "${pids[@]}" || true
