#!/usr/bin/env bash
# Install the MariaDB server and client (Debian's apt packages) that the `mariadb` test tier starts privately.
# Idempotent: when mariadbd and mariadb-binlog are already on the machine it only reports their version.
# Needs root (or sudo) the first time. Without apt (not Debian) it prints what to install and exits 0, so the
# tests themselves decide: outside CI they skip with that reason, in CI (CI=true) a missing server fails them.
# Usage: bash scripts/install_mariadb.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

have_server() {
  command -v mariadb-binlog >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 &&
    { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }
}

if have_server; then
  echo "install_mariadb: ok ($(mariadb-binlog --version 2>/dev/null | head -n1))"
  exit 0
fi

bash "$here/apt_install.sh" install_mariadb mariadb-server mariadb-client || { [ $? = 3 ] && exit 0; exit 1; }
have_server || { echo "install_mariadb: apt finished but mariadbd/mariadb-binlog are still missing" >&2; exit 1; }
echo "install_mariadb: ok ($(mariadb-binlog --version 2>/dev/null | head -n1))"
