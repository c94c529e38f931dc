#!/usr/bin/env bash
# Set up, then run the whole test suite (all tiers). Extra arguments go to pytest, e.g.
#   bash scripts/test.sh -m "not slow"     # the fast tier, in seconds
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install_mariadb.sh
bash docker/install_validators.sh
bash scripts/install_chromium.sh
exec .venv/bin/python -m pytest "$@"
