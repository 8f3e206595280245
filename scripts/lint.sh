#!/usr/bin/env bash
# `make lint`: the house style (.swift-format, checked by the toolchain's swift-format), the docs'
# relative links and anchors, and no text that tells how the repository was built (rounds of work,
# issue numbers, dates, before → after figures: git and CHANGELOG.md keep that).
set -euo pipefail
cd "$(dirname "$0")/.."

swift format lint --strict --recursive --parallel Sources Tests Package.swift
python3 scripts/check-docs.py
python3 scripts/check-prose.py
