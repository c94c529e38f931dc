#!/usr/bin/env bash
# Install the MariaDB server and client (Debian's apt packages) that the `mariadb` test tier starts privately.
# Idempotent: when mariadbd and mariadb-binlog are already on the machine it only reports their version.
# Needs root (or sudo) the first time. Without apt (not Debian) it prints what to install and exits 0, so the
# tests themselves decide: outside CI they skip with that reason, in CI (CI=true) a missing server fails them.
# Usage: bash scripts/install_mariadb.sh
set -euo pipefail

have_server() {
  command -v mariadb-binlog >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 &&
    { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }
}

if have_server; then
  echo "install_mariadb: ok ($(mariadb-binlog --version 2>/dev/null | head -n1))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_mariadb: apt-get not found; install mariadb-server and mariadb-client (10.11) yourself" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_mariadb: not root and no sudo; run as root: apt-get install -y mariadb-server mariadb-client" >&2
    exit 0
  fi
fi

echo "install_mariadb: installing mariadb-server and mariadb-client with apt (about 15 s)"
# The packages' maintainer scripts start a system service; keep them from doing so (the tests start their own).
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
$SUDO apt-get install -y -qq mariadb-server mariadb-client >/dev/null
have_server || { echo "install_mariadb: apt finished but mariadbd/mariadb-binlog are still missing" >&2; exit 1; }
echo "install_mariadb: ok ($(mariadb-binlog --version 2>/dev/null | head -n1))"
