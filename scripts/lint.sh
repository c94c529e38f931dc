#!/usr/bin/env bash
# The habits a tool keeps: lint, format and type checks of the Python code (ruff, mypy: settings in the
# repository's pyproject.toml) and of the native core (cargo fmt, clippy with warnings as errors, and its Rust
# unit tests). Runs every check, prints a line per check, and exits non-zero when any failed.
# scripts/test.sh runs it before pytest. Usage: bash scripts/lint.sh          (after scripts/setup.sh)
# To fix what the formatters report: .venv/bin/ruff format . && (cd native && cargo fmt)
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
check() {   # check NAME COMMAND...: run one check, remember a failure
  local name=$1; shift
  echo "==== lint: $name"
  if "$@"; then echo "lint: $name ok"; else echo "lint: $name FAILED" >&2; failed+=("$name"); fi
}

check "ruff check" .venv/bin/ruff check --no-cache .
check "ruff format --check" .venv/bin/ruff format --no-cache --check .
check "mypy" .venv/bin/mypy
if ! command -v cargo >/dev/null 2>&1; then
  echo "lint: no Rust toolchain (cargo): the native core's checks are skipped (binlake uses its pure-Python decoder)"
else
  for tool in fmt clippy; do
    cargo "$tool" --version >/dev/null 2>&1 || {
      echo "lint: cargo $tool is missing; install it with: rustup component add ${tool/fmt/rustfmt}" >&2
      failed+=("cargo $tool (missing)"); }
  done
  check "cargo fmt --check" cargo fmt --manifest-path native/Cargo.toml --check
  check "cargo clippy" cargo clippy --manifest-path native/Cargo.toml --locked --all-targets --quiet -- -D warnings
  check "cargo test" cargo test --manifest-path native/Cargo.toml --locked --quiet
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: all checks passed"
