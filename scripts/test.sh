#!/usr/bin/env bash
# Set up, run the lint, format and type checks (scripts/lint.sh), then the whole test suite (all tiers); the
# exit code is non-zero when either failed (a lint failure does not stop the tests). Extra arguments go to pytest, e.g.
#   bash scripts/test.sh -m "not slow"     # the fast tier, in seconds
# The suite runs on BINLAKE_TEST_WORKERS pytest-xdist workers (default 2; 0 runs in this process), each test file
# (and each package's files sharing a session fixture) on one worker, the longest groups first (tests/conftest.py,
# tests/group_seconds.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/install_mariadb.sh
bash scripts/install_postgres.sh
bash docker/install_validators.sh
bash scripts/install_chromium.sh
# The full log goes to .test-logs/; a short recap (failures, errors, slowest tests) ends the output, so a CI
# view of the last lines names every failing test even when one assertion prints a long diff.
mkdir -p .test-logs
log=.test-logs/pytest-$(date +%Y%m%d-%H%M%S).log
set +e
bash scripts/lint.sh
lint_rc=$?
.venv/bin/python -m pytest -n "${BINLAKE_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# The recap never changes the exit code (grep finds no FAILED line on a green run).
echo "==== recap (full log: $log) ===="
sed -n '/slowest [0-9]* durations/,/^==/p' "$log" | head -17
grep -E '^(FAILED|ERROR) ' "$log" | cut -c1-300 || true
tail -n 1 "$log"
[ "$lint_rc" -eq 0 ] || echo "scripts/lint.sh failed (its output is above the test run): see what it names"
[ "$rc" -ne 0 ] && exit "$rc"
exit "$lint_rc"
