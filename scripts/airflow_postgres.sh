#!/usr/bin/env bash
# A private PostgreSQL cluster for the local Airflow's metadata database: initdb/pg_ctl into a project folder
# (default airflow/home/pg), listening on 127.0.0.1 only, no Unix socket, no system service. Database and user
# `airflow`, password `airflow` (what scripts/airflow_env.sh's AIRFLOW__DATABASE__SQL_ALCHEMY_CONN names, and
# what docker/compose.yaml's postgres uses). Run as root, the server runs as the `postgres` user (PostgreSQL
# refuses root), so that user must be able to reach the folder.
#
#   bash scripts/airflow_postgres.sh start     # create the cluster when missing, start it when stopped
#   bash scripts/airflow_postgres.sh stop      # stop it (fast shutdown)
#   bash scripts/airflow_postgres.sh status    # exit 0 when it runs
#   bash scripts/airflow_postgres.sh bindir    # the folder of PostgreSQL's initdb/pg_ctl/postgres
#
# Settings (environment): BINLAKE_PG_DIR (default $AIRFLOW_HOME/pg, AIRFLOW_HOME as in airflow_env.sh),
# BINLAKE_PG_PORT (default 54320). PostgreSQL itself: bash scripts/install_postgres.sh.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${BINLAKE_PG_DIR:-${AIRFLOW_HOME:-$repo/airflow/home}/pg}"
port="${BINLAKE_PG_PORT:-54320}"
data="$dir/data"
log="$dir/postgres.log"

bindir() {
  local d
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    d=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
    [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  fi
  # Debian keeps the server's programs off PATH, one folder per major version: take the newest
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  done
  return 1
}

# as_owner CMD...: run CMD as the cluster's owner (root: the `postgres` user; anyone else: themselves)
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

fail() { echo "airflow_postgres: $*" >&2; exit 1; }

case "${1:-}" in
  bindir) bindir; exit $? ;;
  start|stop|status) ;;
  *) echo "usage: bash scripts/airflow_postgres.sh start|stop|status|bindir" >&2; exit 2 ;;
esac

BIN=$(bindir) || fail "PostgreSQL is not installed; run: bash scripts/install_postgres.sh"
running() { [ -f "$data/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; }

case "$1" in
  status) running; exit $? ;;
  stop)
    if running; then as_owner "$BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
    exit 0 ;;
esac

# --- start ---
if running; then exit 0; fi
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || fail "no 'postgres' user to run the server as (PostgreSQL refuses root); reinstall postgresql"
  mkdir -p "$dir"
  chown postgres: "$dir"
  runuser -u postgres -- test -w "$dir" ||
    fail "the postgres user can not write $dir (a parent folder is private?); set BINLAKE_PG_DIR to a folder it can reach"
else
  mkdir -p "$dir"
fi
if [ ! -f "$data/PG_VERSION" ]; then
  pwfile="$dir/.pw"
  as_owner sh -c "umask 077; printf 'airflow\n' > '$pwfile'"
  as_owner "$BIN/initdb" -D "$data" -U airflow --pwfile="$pwfile" --auth=scram-sha-256 -E UTF8 --no-locale \
    >"$dir/initdb.log" 2>&1 || { as_owner rm -f "$pwfile"; fail "initdb failed; see $dir/initdb.log"; }
  as_owner rm -f "$pwfile"
fi
# loopback TCP only; commits need not wait for the disk (a crash loses the last instants of Airflow's bookkeeping,
# never consistency)
opts="-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories= -c synchronous_commit=off"
as_owner "$BIN/pg_ctl" -D "$data" -l "$log" -o "$opts" -w -t 60 start >/dev/null ||
  fail "PostgreSQL did not start on 127.0.0.1:$port (port taken? BINLAKE_PG_PORT picks another); log: $log: $(tail -n 3 "$log" 2>/dev/null | tr '\n' ' ')"
export PGPASSWORD=airflow
psql=("$BIN/psql" -h 127.0.0.1 -p "$port" -U airflow -d postgres -v ON_ERROR_STOP=1 -qtA)
[ -x "$BIN/psql" ] || psql=(psql -h 127.0.0.1 -p "$port" -U airflow -d postgres -v ON_ERROR_STOP=1 -qtA)
if [ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'airflow'")" != 1 ]; then
  "${psql[@]}" -c "CREATE DATABASE airflow" >/dev/null
fi
