#!/bin/sh
# `make install` and the dev-install stamp (the Makefile runs it; it lives with the lock files it installs): create the virtual environment with the given Python (>= 3.11) if it is
# missing, then install the hash-pinned requirements files and the project (editable) into it. It never installs
# into the interpreter it was given, so it works on "externally managed" distribution Pythons (PEP 668).
# Usage: .ci/install.sh PYTHON VENV REQUIREMENTS_FILE...
set -eu
python=$1 venv=$2
shift 2
say() { echo "make install: $*" >&2; }

command -v "$python" >/dev/null 2>&1 || { say "no '$python' found; install Python 3.11 or newer, or pass PYTHON=/path/to/python3"; exit 1; }
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    found=$("$python" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "not a working Python")
    say "gmail-stats needs Python 3.11 or newer, but $python is $found; pass a newer one, e.g. make install PYTHON=python3.12"
    exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package.
    if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
        minor=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        say "$python cannot create a virtual environment (its ensurepip module is missing)."
        say "On Debian or Ubuntu install it with: sudo apt install python3-venv   (python$minor-venv for a non-default python$minor)"
        exit 1
    fi
    say "creating $venv with $python"
    "$python" -m venv "$venv"
fi
# A venv made by other tools (uv) may lack pip: bootstrap it from the standard library.
"$venv/bin/python" -m pip --version >/dev/null 2>&1 || "$venv/bin/python" -m ensurepip --default-pip >/dev/null
pip() { "$venv/bin/python" -m pip --disable-pip-version-check --quiet "$@"; }
say "installing $* into $venv (hash-pinned)"
requirements=
for file in "$@"; do requirements="$requirements -r $file"; done
# shellcheck disable=SC2086 # one "-r FILE" pair per requirements file
pip install --require-hashes --no-deps $requirements
# The project itself: editable, built with the pinned hatchling from the lock instead of an unpinned download.
pip install --no-deps --no-build-isolation --editable .
