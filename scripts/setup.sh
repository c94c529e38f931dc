#!/usr/bin/env bash
# Set up everything binlake needs on a fresh machine: a virtualenv in .venv with the pinned requirements and the
# binlake package (editable). Idempotent: a second run only checks. Usage: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements.txt
.venv/bin/python -m pip install --quiet --no-deps -e libs
echo "setup: ok ($(.venv/bin/binlake --version))"
