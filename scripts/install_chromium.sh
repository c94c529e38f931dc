#!/usr/bin/env bash
# Install Debian's headless-capable Chromium, which the quality tests use to open the data-quality summary and
# Great Expectations Data Docs (screenshot + DOM text). Idempotent: when `chromium` is on PATH it only reports
# its version. Needs root (or sudo) the first time. Without apt it prints what to install and exits 0; the
# browser tests then skip with that reason.
# Usage: bash scripts/install_chromium.sh
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  echo "install_chromium: ok ($(chromium --version 2>/dev/null | head -n1))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: apt-get not found; install Chromium (the \`chromium\` command) yourself" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_chromium: not root and no sudo; run as root: apt-get install -y chromium" >&2
    exit 0
  fi
fi

export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
  $SUDO apt-get update >/dev/null
  $SUDO apt-get install -y --no-install-recommends chromium >/dev/null
fi
echo "install_chromium: installed ($(chromium --version 2>/dev/null | head -n1))"
