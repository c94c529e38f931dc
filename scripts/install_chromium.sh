#!/usr/bin/env bash
# Install Debian's headless-capable Chromium, which the quality tests use to open the data-quality summary and
# Great Expectations Data Docs (screenshot + DOM text). Idempotent: when `chromium` is on PATH it only reports
# its version. Needs root (or sudo) the first time. Without apt it prints what to install and exits 0; the
# browser tests then skip with that reason.
# Usage: bash scripts/install_chromium.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if command -v chromium >/dev/null 2>&1; then
  echo "install_chromium: ok ($(chromium --version 2>/dev/null | head -n1))"
  exit 0
fi

bash "$here/apt_install.sh" install_chromium --no-install-recommends chromium || { [ $? = 3 ] && exit 0; exit 1; }
echo "install_chromium: installed ($(chromium --version 2>/dev/null | head -n1))"
