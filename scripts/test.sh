#!/usr/bin/env bash
# Set up, then run the whole test suite (all tiers). Extra arguments go to pytest, e.g.
#   bash scripts/test.sh -m "not slow"     # the fast tier, in seconds
# The suite runs on BINLAKE_TEST_WORKERS pytest-xdist workers (default 2; 0 runs in this process), each test file
# (and each package sharing a session fixture, see tests/conftest.py) on one worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install_mariadb.sh
bash docker/install_validators.sh
bash scripts/install_chromium.sh
exec .venv/bin/python -m pytest -n "${BINLAKE_TEST_WORKERS:-2}" --dist loadgroup "$@"
