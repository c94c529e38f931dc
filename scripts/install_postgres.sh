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

bash "$here/apt_install.sh" install_postgres postgresql || { [ $? = 3 ] && exit 0; exit 1; }
bin=$(bash "$here/airflow_postgres.sh" bindir) ||
  { echo "install_postgres: apt finished but initdb/pg_ctl are still missing" >&2; exit 1; }
echo "install_postgres: ok ($("$bin/postgres" --version))"
