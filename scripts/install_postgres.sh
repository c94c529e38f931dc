#!/usr/bin/env bash
# Install PostgreSQL (Debian's `postgresql` package), the metadata database of the local Airflow
# (scripts/airflow_postgres.sh starts a private cluster of it; no system service is used or started).
# Idempotent: when initdb and pg_ctl are already on the machine it only reports their version. Needs root (or sudo)
# the first time. Without apt (not Debian) it prints what to install and exits 0.
# Usage: bash scripts/install_postgres.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if bin=$(bash "$here/airflow_postgres.sh" bindir 2>/dev/null); then
  echo "install_postgres: ok ($("$bin/postgres" --version))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_postgres: apt-get not found; install PostgreSQL (initdb, pg_ctl, postgres) yourself" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_postgres: not root and no sudo; run as root: apt-get install -y postgresql" >&2
    exit 0
  fi
fi

echo "install_postgres: installing postgresql with apt (about 20 s)"
# The package's maintainer scripts would create and start a system cluster; keep them from starting it.
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
$SUDO apt-get install -y -qq postgresql >/dev/null
bin=$(bash "$here/airflow_postgres.sh" bindir) ||
  { echo "install_postgres: apt finished but initdb/pg_ctl are still missing" >&2; exit 1; }
echo "install_postgres: ok ($("$bin/postgres" --version))"
