#!/bin/sh
# `make lock`: re-resolves pyproject.toml into the three hash-pinned requirements files that every install uses.
# Versions already pinned are kept unless pyproject.toml no longer allows them (uv prefers the output file's pins);
# UPGRADE=1 re-resolves to the newest allowed versions. The files must name no package-index host (checked below).
set -eu
cd "$(dirname "$0")/.."
uv=${UV:-.venv/bin/uv}
[ -x "$uv" ] || uv=$(command -v uv) || { echo "make lock: needs uv (make install-dev puts it in .venv)" >&2; exit 1; }
upgrade=
[ "${UPGRADE:-0}" = 1 ] && upgrade=--upgrade
compile() {
    # --universal: one lock for Linux and macOS; 3.11 is the oldest Python pyproject.toml allows.
    "$uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes --no-header $upgrade "$@"
}
# runtime (what `make install` and the Docker image install), then dev (a superset, constrained to the runtime
# pins), then build (hatchling, constrained to the dev pins) so the three never disagree on a version.
locks=.ci/requirements
compile pyproject.toml -o $locks/runtime.txt
compile pyproject.toml --group build --group dev -c $locks/runtime.txt -o $locks/dev.txt
compile --group pyproject.toml:build -c $locks/dev.txt -o $locks/build.txt
if grep -nE '(https?|file)://|index-url|find-links' $locks/*.txt >&2; then
    echo "make lock: a requirements file names an index or URL (above); the lock must name packages and hashes only" >&2
    exit 1
fi
echo "make lock: $locks/runtime.txt, build.txt and dev.txt are up to date with pyproject.toml" >&2
