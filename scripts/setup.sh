#!/usr/bin/env bash
# Installs what Herald needs on Debian and is missing; does nothing when all is present.
#   scripts/setup.sh          system packages for building and running
#   scripts/setup.sh --test   plus what the test suite needs
#   scripts/setup.sh --bench  plus what the test suite and `make bench` need (wrk drives the load, perf profiles,
#                             valgrind counts herald-api's instructions per send)
set -euo pipefail

packages=(rabbitmq-server librabbitmq-dev libcurl4-openssl-dev libsqlite3-dev libjemalloc-dev libcrypt-dev pkg-config curl python3)
# The suite runs every store test and the main end-to-end tests against PostgreSQL 15 too (scripts/postgres.sh),
# and one test on three network namespaces (iproute2's ip netns; needs root, as CI has).
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then packages+=(postgresql-15 postgresql-client-15 iproute2); fi
if [ "${1:-}" = "--bench" ]; then packages+=(wrk linux-perf); fi
# The monitoring tests run promtool and a Prometheus server of their own (deploy/monitoring), the status
# page test headless Chromium through chromedriver; without recommends (node exporter, smartmontools…).
lean=()
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then lean+=(prometheus chromium chromium-driver); fi
if [ "${1:-}" = "--bench" ]; then lean+=(valgrind binutils); fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for package in "${packages[@]}"; do installed "$package" || missing+=("$package"); done
missing_lean=()
for package in "${lean[@]}"; do installed "$package" || missing_lean+=("$package"); done

if [ ${#missing[@]} -gt 0 ] || [ ${#missing_lean[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]} ${missing_lean[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # The packages' post-install cannot start a service without systemd (policy-rc.d); that is fine:
  # scripts/broker.sh and scripts/postgres.sh run project-local servers, tests their own Prometheus.
  if [ ${#missing[@]} -gt 0 ]; then $SUDO apt-get install -y -qq "${missing[@]}" > /dev/null; fi
  if [ ${#missing_lean[@]} -gt 0 ]; then $SUDO apt-get install -y -qq --no-install-recommends "${missing_lean[@]}" > /dev/null; fi
fi

if ! command -v swift > /dev/null; then
  echo "setup: the Swift toolchain (6.3) is not on PATH; install it from swift.org first" >&2
  exit 1
fi

# The test suite's real SMTP server (aiosmtpd), the firebase-admin SDK it checks compatibility with, pika
# (the README's producer example), jsonschema with PyYAML (jobs checked against deploy/asyncapi.yaml) and
# selenium (drives Debian's chromedriver for the status page test), schemathesis (deploy/openapi.yaml) and
# phonenumbers (libphonenumber's metadata, which number parsing is checked against), and the SMS providers'
# own libraries (twilio, vonage, PyNaCl), which the provider signatures are checked against, from PyPI into a
# project-local virtualenv (.herald/venv), so nothing is installed system-wide. The Vonage SDK's v3, the last
# with Vonage's plain MD5-hash signature, cannot share that environment with v4; it goes to .herald/pylib/vonage3.
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  VENV=.herald/venv
  if ! "$VENV/bin/python" -c 'import aiosmtpd, firebase_admin, pika, jsonschema, yaml, selenium, schemathesis, phonenumbers, twilio, vonage_http_client, nacl' 2> /dev/null; then
    if ! python3 -m venv --help > /dev/null 2>&1; then
      SUDO=""
      if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
      $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv > /dev/null
    fi
    echo "setup: installing aiosmtpd, firebase-admin, pika, jsonschema, PyYAML, selenium, schemathesis, phonenumbers, twilio, vonage and PyNaCl into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check aiosmtpd firebase-admin pika jsonschema pyyaml selenium schemathesis phonenumbers \
      twilio vonage pynacl
  fi
  if [ ! -d .herald/pylib/vonage3/vonage ]; then
    echo "setup: installing the Vonage SDK v3 into .herald/pylib/vonage3"
    "$VENV/bin/pip" install -q --disable-pip-version-check --target .herald/pylib/vonage3 "vonage<4"
  fi
fi
