#!/usr/bin/env bash
# `make lint`: the house style (.swift-format, checked by the toolchain's swift-format) and the docs'
# relative links and anchors.
set -euo pipefail
cd "$(dirname "$0")/.."

swift format lint --strict --recursive --parallel Sources Tests Package.swift
python3 scripts/check-docs.py
