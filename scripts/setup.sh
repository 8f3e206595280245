#!/usr/bin/env bash
# Installs what Herald needs on Debian and is missing; does nothing when all is present.
#   scripts/setup.sh          system packages for building and running
#   scripts/setup.sh --test   plus what the test suite needs
set -euo pipefail

packages=(rabbitmq-server librabbitmq-dev libcurl4-openssl-dev libsqlite3-dev pkg-config curl python3)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # The package's post-install cannot start a service without systemd (policy-rc.d); that is fine:
  # scripts/broker.sh runs a project-local broker instead.
  $SUDO apt-get install -y -qq "${missing[@]}" > /dev/null
fi

if ! command -v swift > /dev/null; then
  echo "setup: the Swift toolchain (6.3) is not on PATH; install it from swift.org first" >&2
  exit 1
fi
