#!/usr/bin/env bash
# Debian packages the tests use (idempotent; quick when already installed): Chromium for the browser tests, and
# python3-venv so `make install` can create .venv with Debian's own python3; HAProxy, which runs the Docker API
# filter's configuration in tests/docker/test_api_filter.py; npm (only when no npm is installed) for the test-only
# axe-core of the accessibility tests (tests/axe/, installed by the tests with `npm ci`).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
missing=()
for pkg in chromium make python3-venv git haproxy; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
