#!/usr/bin/env bash
# Install Debian packages for a test tier without starting their system services (the tests start private
# servers). Shared by install_mariadb.sh, install_postgres.sh and install_chromium.sh.
# Usage: bash scripts/apt_install.sh NAME PACKAGE...   (NAME prefixes the messages)
# Exit 0 having installed; exit 3 when it can not (no apt-get, or not root and no sudo), having said what to run.
set -euo pipefail
name=$1
shift

if ! command -v apt-get >/dev/null 2>&1; then
  echo "$name: apt-get not found; install $* yourself" >&2
  exit 3
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "$name: not root and no sudo; run as root: apt-get install -y $*" >&2
    exit 3
  fi
fi

echo "$name: installing $* with apt (about 20 s)"
# Maintainer scripts would create and start system services; a policy-rc.d that answers 101 keeps them down.
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
created_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod +x "$policy"
  created_policy=1
fi
cleanup() { if [ -n "$created_policy" ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "$@" >/dev/null
